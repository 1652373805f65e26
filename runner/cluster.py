"""The cluster lines of ``python -m runner status`` in the distributed mode (Redis).

What :func:`scraper.distributed.registry.cluster_status` read from Redis — runners seen (their
heartbeats), workers per machine, each spider's queue and round — as a few short lines under the
local workers' table; the shared GitHub budget replaces the local one in the budget rows.
"""

from __future__ import annotations

import time
from typing import Any

from scraper.units import format_duration


def render_cluster(cluster: dict[str, Any]) -> list[str]:
    if not cluster.get("reachable"):
        return [f"cluster {cluster['url']}: REDIS UNREACHABLE ({cluster.get('error')})"]
    now = time.time()
    runners, hosts = cluster["runners"], cluster["hosts"]
    workers = sum(h["workers"] for h in hosts.values())
    lines = [f"cluster {cluster['url']}: {len(runners)} runners, {workers} workers on "
             f"{len(hosts)} machines"]
    for r in runners:
        mine = cluster["by_runner"].get(f"{r['host']}:{r['pid']}", {})
        spiders = ", ".join(f"{s} {n}" for s, n in sorted(mine.items())) or "none now"
        up, seen = format_duration(now - r["started_at"]), format_duration(now - r["updated_at"])
        lines.append(f"  runner {r['host']} pid {r['pid']}: up {up}, seen {seen} ago, "
                     f"{r.get('planned', '?')} planned; working: {spiders}")
    for host, info in sorted(hosts.items()):
        spiders = ", ".join(f"{s} {n}" for s, n in sorted(info["spiders"].items()))
        lines.append(f"  machine {host}: {info['workers']} workers ({spiders})")
    lines.append(f"  {'queue':<9} {'round':>5} {'state':<9} {'start':>5} {'queued':>7} "
                 f"{'busy':>4}  next round")
    for spider, q in cluster["queues"].items():
        if not (q["round"] or q["requests"] or q["start_urls"]):
            continue
        next_round = "-"
        if q["state"] == "finished" and q["next_round_at"]:
            next_round = f"in {format_duration(q['next_round_at'] - cluster['now'])}"
        lines.append(f"  {spider:<9} {q['round']:>5} {q['state'] or '-':<9} "
                     f"{q['start_urls']:>5} {q['requests']:>7} {q['busy']:>4}  {next_round}")
    return lines  # the cluster's GitHub budget is shown as the status's budget
