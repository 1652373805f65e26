"""``state/status.json`` (written by the runner) and ``python -m runner status`` (reading it).

The runner writes its plan, each slot's state and the exact command line it was started with;
each worker writes its own ``state/workers/*.json``. ``status`` joins the two, so it is
readable even when the runner is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.budgetstatus import budget_rows, render_budget
from runner.pidfile import running_pid
from scraper.extensions.workerstate import write_json_atomic
from scraper.layout import DataLayout
from scraper.units import format_duration, format_size

if TYPE_CHECKING:
    from runner.supervisor import Supervisor


def write_runner_status(supervisor: Supervisor) -> None:
    write_json_atomic(supervisor.layout.status_file, {
        "runner": {
            "pid": os.getpid(),
            "started_at": supervisor.started_at,
            "updated_at": time.time(),
            "state": "stopping" if supervisor.stopping else "running",
            "command": supervisor.command,
            "cwd": os.getcwd(),
            "config": supervisor.config_path,
            "data_dir": str(supervisor.config.data_dir),
            "plan": supervisor.plan.describe(),
            "planned": supervisor.plan.total,
            "round_interval": supervisor.config.round_interval,
            "once": supervisor.once,
            "memory_budget": supervisor.guard.budget,
            "disk_full_since": supervisor.disk_full_since,
            # Distributed mode: the Redis URL (status connects with it) and whether it answers.
            "redis_url": supervisor.redis_url,
            "redis": supervisor.beacon.state if supervisor.beacon else None,
        },
        "workers": [state.as_dict() for state in supervisor.slots],
    })


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def data_size(root: Path) -> int:
    total = 0
    for directory, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_blocks * 512
    return total


def collect_status(layout: DataLayout, redis_url: str | None = None) -> dict[str, Any]:
    """The ``status --json`` object: ``{"runner": …, "workers": […], "totals": …}``, plus
    ``"cluster"`` in the distributed mode (``redis_url``, else the runner's)."""
    status = read_json(layout.status_file) or {"runner": {}, "workers": []}
    runner = dict(status.get("runner") or {})
    pid = running_pid(layout.runner_pidfile)
    runner["alive"] = pid is not None
    runner["pid"] = pid if pid is not None else runner.get("pid")
    now = time.time()
    workers = []
    for slot in status.get("workers") or []:
        row = dict(slot)
        live = read_json(layout.workers_state_dir / f"{slot['slug']}.json") or {}
        this_round = live.get("started_at", 0) >= (slot.get("round_started_at") or 0) - 1
        row["items_round"] = live.get("items", 0) if this_round else 0
        running_items = row["items_round"] if slot.get("state") == "running" else 0
        row["items_total"] = (slot.get("items_total") or 0) + running_items
        row["pages"] = live.get("pages", 0) if this_round else 0
        row["uss_mb"] = live.get("uss_mb") if slot.get("state") == "running" else None
        row["last_error"] = slot.get("last_error") or live.get("last_error")
        if (slot.get("state") == "running" and this_round
                and (live.get("stats") or {}).get("distributed/redis_up") == 0):
            row["state"] = "redis-wait"  # paused: its Redis is unreachable
        next_at = slot.get("next_round_at")
        row["next_round_in"] = max(0.0, next_at - now) if next_at else None
        if not runner["alive"] and row.get("state") in ("running", "sleeping", "restarting"):
            row["state"] = "down"
        workers.append(row)
    up = sum(1 for w in workers if w.get("state") in ("running", "sleeping", "redis-wait"))
    totals = {
        "items": sum(w["items_total"] for w in workers),
        "data_bytes": data_size(layout.root) if layout.root.exists() else 0,
        "workers_up": up,
        "workers_planned": runner.get("planned", len(workers)),
    }
    status = {"runner": runner, "workers": workers, "totals": totals,
              "budget": budget_rows(layout)}
    redis_url = redis_url or runner.get("redis_url")
    if redis_url:
        from scraper.distributed.registry import cluster_status

        status["cluster"] = cluster_status(redis_url)
        if status["cluster"].get("reachable"):  # the budget in effect is the cluster's
            from runner.budgetstatus import rows_from_buckets

            status["budget"] = rows_from_buckets(status["cluster"]["budget"], time.time())
    return status




def render_status(status: dict[str, Any]) -> str:
    """A table that fits a phone's ssh session: one short row per worker."""
    runner, totals = status["runner"], status["totals"]
    lines = []
    if runner.get("alive"):
        updated = time.time() - (runner.get("updated_at") or 0)
        up = format_duration(time.time() - runner["started_at"])
        lines.append(f"runner pid {runner['pid']} up {up}, status {format_duration(updated)} "
                     f"old — {runner.get('plan', '')}")
    elif runner.get("plan"):
        lines.append(f"runner NOT RUNNING (last pid {runner.get('pid')}) — {runner['plan']}")
    else:
        lines.append("runner has never run with this data_dir")
    if runner.get("alive") and runner.get("disk_full_since"):
        since = format_duration(time.time() - runner["disk_full_since"])
        lines.append(f"DISK FULL for {since}: no workers start until space is freed under "
                     "data_dir")
    header = f"{'worker':<14} {'state':<10} {'pid':>7} {'rnd':>4} {'items':>11} {'pages':>6} " \
             f"{'MB':>5} {'next':>5}  last error"
    redis = runner.get("redis") or {}
    if runner.get("alive") and redis.get("state") == "unreachable":
        lines.append(f"REDIS UNREACHABLE for {format_duration(time.time() - redis['down_since'])} "
                     f"({redis['url']}): workers pause their shared work until it is back")
    lines.append(header)
    for w in status["workers"]:
        items = f"{w['items_round']}/{w['items_total']}"
        mb = f"{w['uss_mb']:.0f}" if w.get("uss_mb") else "-"
        error = (w.get("last_error") or "")[:60]
        lines.append(f"{w['slug']:<14} {w['state']:<10} {w.get('pid') or '-':>7} "
                     f"{w['rounds']:>4} {items:>11} {w['pages']:>6} {mb:>5} "
                     f"{format_duration(w.get('next_round_in')):>5}  {error}")
    lines.append(f"total: {totals['items']} items, data {format_size(totals['data_bytes'])}, "
                 f"workers up {totals['workers_up']}/{totals['workers_planned']}")
    lines += render_budget(status.get("budget") or [])
    if "cluster" in status:
        from runner.cluster import render_cluster

        lines += render_cluster(status["cluster"])
    return "\n".join(lines)
