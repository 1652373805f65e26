"""CPU of reading the gap ledger: what ``status`` and ``metrics`` pay for the last 24 hours'
share, and ``gaps`` for its default 7 days.

    python -m benchmarks.ledger [--days 30] [--scales 1,10]

Writes ``--days`` days of ledger through the writer's own functions (:mod:`scraper.utils.ledger`),
at the default lists, queries and sites (12 trending lists and 2 search queries an hour, 14
docs sites every 6 hours) times each scale, every fetch ``data``. Then, each the median of 5:
``recent_ledger`` with its file cache emptied (a ``status`` process: cold) and kept (the
runner's metrics, every status write: warm), and ``gaps``' 7 days. Baseline in the same run:
``json.loads`` of every line of the same 24 hours' files (what any reader of the lines pays).
Results: ``benchmarks/results/ledger.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS_DIR, format_table, machine_info, publish
from runner.core.ledgerview import recent_ledger
from scraper.utils import ledger
from scraper.utils.layout import DataLayout

REPEAT = 5
DEFAULTS = {"trending": (12, 1), "search": (2, 1), "docs": (14, 6)}
"""Per spider: scheduled fetches a round, and hours between rounds, at the defaults."""


def write_ledger(state: Path, days: int, scale: int, now: float) -> int:
    lines = 0
    for hour in range(days * 24):
        started = now - hour * 3600
        for spider, (count, every) in DEFAULTS.items():
            if hour % every:
                continue
            stamp = ledger.stamp_ms(started)
            keys = [f"{spider}-{k}" for k in range(count * scale)]
            fd = ledger.open_ledger(ledger.ledger_file(state, stamp[:10], f"{spider}-0of1"))
            common = {"round": stamp, "spider": spider, "shard": "0/1"}
            ledger.append_line(fd, {"t": "plan", **common, "pid": 1, "kind": "x",
                                    "keys": keys})
            for key in keys:
                ledger.append_line(fd, {"t": "fetch", **common, "key": key, "outcome": "data",
                                        "cause": "", "detail": "", "at": stamp})
            ledger.append_line(fd, {"t": "close", **common, "reason": "finished", "at": stamp})
            os.close(fd)
            lines += len(keys) + 2
    return lines


def cpu_ms(call: Callable[[], Any], before: Callable[[], None] = lambda: None) -> float:
    runs = []
    for _ in range(REPEAT):
        before()
        started = time.process_time()
        call()
        runs.append((time.process_time() - started) * 1000)
    return round(statistics.median(runs), 2)


def parse_only(state: Path, since: str) -> int:
    count = 0
    for path in sorted(ledger.ledger_root(state).glob("*/*.jsonl")):
        if path.parent.name >= since[:10]:
            for line in path.read_bytes().splitlines():
                json.loads(line)
                count += 1
    return count


def measure(days: int, scale: int, now: float) -> dict[str, Any]:
    layout = DataLayout(Path(tempfile.mkdtemp(prefix="hubcollect-ledger-")))
    lines = write_ledger(layout.state_dir, days, scale, now)
    size = sum(p.stat().st_size for p in ledger.ledger_root(layout.state_dir).rglob("*"))
    since = ledger.since_hours(24)
    baseline = cpu_ms(lambda: parse_only(layout.state_dir, since))
    cold = cpu_ms(lambda: recent_ledger(layout), ledger._parsed.clear)
    warm = cpu_ms(lambda: recent_ledger(layout))
    week = cpu_ms(lambda: ledger.gap_spans(ledger.scheduled_fetches(
        layout.state_dir, ledger.since_hours(7 * 24))), ledger._parsed.clear)
    return {"scale": scale, "days": days, "lines": lines, "bytes": size,
            "json_loads_24h_ms": baseline, "status_cold_ms": cold, "status_warm_ms": warm,
            "gaps_7d_ms": week, "cold_vs_json_loads": round(cold / baseline, 2) if baseline
            else None}


def run(days: int, scales: list[int]) -> dict[str, Any]:
    now = time.time()
    return {"machine": machine_info(), "rows": [measure(days, scale, now) for scale in scales]}


def render(results: dict[str, Any]) -> str:
    return format_table(
        ("scale", "lines", "MB", "json.loads 24 h ms", "status cold ms", "× json.loads",
         "status warm ms", "gaps 7 d ms"),
        [(f"{r['scale']}× defaults, {r['days']} d", r["lines"], f"{r['bytes'] / 1e6:.1f}",
          r["json_loads_24h_ms"], r["status_cold_ms"], r["cold_vs_json_loads"],
          r["status_warm_ms"], r["gaps_7d_ms"]) for r in results["rows"]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ledger")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--scales", default="1,10")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "ledger.json")
    args = parser.parse_args(argv)
    results = run(args.days, [int(s) for s in args.scales.split(",")])
    return publish(args.out, results, render)


if __name__ == "__main__":
    raise SystemExit(main())
