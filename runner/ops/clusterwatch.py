"""``python -m runner watchdog --cluster``: also say when another box of the cluster went silent.

Each box's watchdog judges its own box (the rest of :mod:`runner.ops.watchdog`); with
``--cluster`` it also reads the cluster's box list from Redis (``{p}:boxes``: every runner's
last heartbeat, kept after the heartbeat key lapses; a clean stop removes its box) and prints
one line when a box stops heartbeating and one when it is back — remembered in
``state/cluster-health.json``, so several boxes' cron jobs each say it once, and nothing is
said while it lasts::

    cluster: box box-b:/srv/hubcollect stopped heartbeating 2m ago (last: 20 workers, 3802 items)
    cluster: box box-b:/srv/hubcollect heartbeating again

It restarts nothing there: that box's own watchdog restarts it, if the box is up at all.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from runner.status.clusterview import silent_boxes
from scraper.cluster.registry import box_name, cluster_status
from scraper.utils.statefile import private_dirs, write_atomic
from scraper.utils.units import format_duration

MEMORY_NAME = "cluster-health.json"


def _read(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def watch_cluster(redis_url: str, prefix: str, state_dir: Path, data_dir: str) -> list[str]:
    """The lines to print (the cluster's news since the last run); updates the memory."""
    cluster = cluster_status(redis_url, prefix)
    path = state_dir / MEMORY_NAME
    reported = _read(path)
    if not cluster.get("reachable"):
        # The box's own workers say Redis is away (status, runner log); one line here too.
        news = [] if reported.get("redis") else [
            f"cluster {cluster['url']}: REDIS UNREACHABLE ({cluster.get('error')})"]
        remember = {**reported, "redis": "unreachable"}
    else:
        own = box_name(socket.gethostname(), data_dir)
        silent = {name: ago for name, ago in silent_boxes(cluster).items() if name != own}
        news = [_silent_line(name, silent[name], cluster["boxes"][name]) for name in sorted(silent)
                if name not in reported]
        news += [f"cluster: box {name} heartbeating again" for name in sorted(reported)
                 if name != "redis" and name in cluster["boxes"] and name not in silent]
        remember = dict.fromkeys(silent, "silent")
    if remember != reported:
        private_dirs(state_dir)
        write_atomic(path, json.dumps(remember))
    return news


def _silent_line(name: str, ago: float, box: dict[str, Any]) -> str:
    return (f"cluster: box {name} stopped heartbeating {format_duration(ago)} ago (last: "
            f"{box.get('workers', 0)} workers, {box.get('items', 0)} items)")
