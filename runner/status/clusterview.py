"""The cluster lines of ``python -m runner status`` in the distributed mode (Redis).

What :func:`scraper.cluster.registry.cluster_status` read from Redis — runners seen (their
heartbeats), workers per machine, each spider's queue and round — as a few short lines under the
local workers' table; the shared GitHub budget replaces the local one in the budget rows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from runner.core.runnerstate import SlotRecord
from scraper.utils.units import format_duration


def box_summary(slots: Sequence[SlotRecord], disk_full_since: float | None) -> dict[str, Any]:
    """What the runner's heartbeat tells the cluster of its box: items, last round, health."""
    failing = sorted(s.slug for s in slots if s.state == "failed" or s.failures)
    if disk_full_since:
        health = "DISK FULL"
    elif failing:
        health = f"FAILING: {', '.join(failing)}"
    else:
        health = "ok"
    started = [s.round_started_at for s in slots if s.round_started_at]
    return {"items": sum(s.items_total for s in slots), "rounds": max(
        (s.rounds for s in slots), default=0), "last_round_at": max(started, default=None),
        "workers": sum(1 for s in slots if s.pid), "health": health}


def silent_boxes(cluster: dict[str, Any]) -> dict[str, float]:
    """Boxes whose runner stopped heartbeating (without a clean stop): name → seconds silent."""
    now = cluster["now"]
    return {name: now - box["updated_at"] for name, box in cluster.get("boxes", {}).items()
            if now - box["updated_at"] > cluster["silent_after"]}


def render_boxes(cluster: dict[str, Any]) -> list[str]:
    """``status --cluster``: every box of the cluster, silent ones included."""
    if not cluster.get("reachable"):
        return [f"cluster {cluster['url']}: REDIS UNREACHABLE ({cluster.get('error')})"]
    now, silent = cluster["now"], silent_boxes(cluster)
    boxes = cluster.get("boxes", {})
    beating = len(boxes) - len(silent)
    lines = [f"cluster {cluster['url']}: {beating} box{'' if beating == 1 else 'es'} heartbeating"
             + (f", {len(silent)} SILENT" if silent else ""), *_dataset_line(cluster),
             f"  {'box':<40} {'pid':>7} {'workers':>7} {'rounds':>6} {'last round':>10} "
             f"{'items':>8}  health"]
    for name, box in sorted(boxes.items()):
        last = box.get("last_round_at")
        ago = f"{format_duration(now - last)} ago" if last else "-"
        health = (f"SILENT for {format_duration(silent[name])}" if name in silent
                  else box.get("health", "?"))
        lines.append(f"  {name[-40:]:<40} {box.get('pid', '?'):>7} {box.get('workers', 0):>7} "
                     f"{box.get('rounds', 0):>6} {ago:>10} {box.get('items', 0):>8}  {health}")
    return lines


def _dataset_line(cluster: dict[str, Any]) -> list[str]:
    dataset = cluster.get("dataset")
    if not dataset:
        return []
    where = (f"built on {dataset['box']}" if dataset["box"] else
             "no box builds it yet (run 'python -m runner catalog' by hand on the one that should)")
    segments = "segment" if dataset["segments"] == 1 else "segments"
    return [f"dataset: {where}; {dataset['segments']} shipped {segments} "
            f"({dataset['bytes'] / 1e6:.1f} MB) waiting in Redis"]


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


CLUSTER_TROUBLE = 1
"""``status --cluster``'s exit status when a box is silent or Redis does not answer."""


def render_cluster_view(status: dict[str, Any]) -> tuple[int, str]:
    """``status --cluster``: the boxes, the shared budget, the queues; and its exit status."""
    from runner.core.budgetview import render_budget

    cluster = status["cluster"]
    lines = render_boxes(cluster)
    if cluster.get("reachable"):
        lines += render_budget(status.get("budget") or [])
        lines += [line for line in render_cluster(cluster) if line.startswith("  ")
                  and not line.startswith(("  runner ", "  machine "))]
    trouble = not cluster.get("reachable") or bool(silent_boxes(cluster))
    return (CLUSTER_TROUBLE if trouble else 0), "\n".join(lines)
