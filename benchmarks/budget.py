"""The shared GitHub budget against the alternatives: budget used and limit violations.

    python -m benchmarks.budget [--scale full|tiny] [--modes ours,predecessor,autothrottle]

Each contender is ``python -m runner --workers 20 --spiders search`` against its own fake GitHub
with short windows (30 search requests per 6 s), for 10 windows from its first request; only
the search spider's settings differ:

* ``ours``: the project as configured (BudgetMiddleware on);
* ``predecessor``: no budget, every process one request at a time, fixed spacing of 2 s scaled
  to the window (2 s × 6/60: the same ratio to the window as 2 s to GitHub's minute);
* ``autothrottle``: no budget, Scrapy's AutoThrottle alone (the project's AUTOTHROTTLE_* values).

Figures come from what the fake served (its ``/_stats``): answers 200/304 over windows × limit
on the wall clock, the same over the windows the fake actually opened (its resets are whole
seconds, rounded up, so a window lasts up to a second longer than nominal, as on GitHub), and
the rate-limit answers (403/429: violations). Results: ``benchmarks/results/budget.json``.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import (
    REPO_ROOT,
    collector_env,
    default_results,
    describe_machine,
    format_table,
    kill_tree,
    machine_info,
    publish,
    ratio,
)
from tests.support.fakes.launcher import FakeServer, fake_windows, start_fake_github

MODES = ("ours", "ours-unconfigured-window", "predecessor", "autothrottle")
"""``ours-unconfigured-window``: the config gives the limit only; the window is learned from
the headers (the default guess is GitHub's 60 s search window)."""
PREDECESSOR_SPACING = 2.0  # seconds between one process's requests, against GitHub's minute
GITHUB_SEARCH_WINDOW = 60.0


@dataclass(frozen=True, slots=True)
class Scale:
    workers: int
    windows: int
    limit: int
    window: float  # seconds
    queries_per_worker: int = 2


SCALES = {
    "full": Scale(workers=20, windows=10, limit=30, window=6.0),
    "tiny": Scale(workers=4, windows=3, limit=10, window=4.0),
}


def mode_settings(mode: str, scale: Scale) -> dict[str, Any]:
    """The search spider's settings for one contender (everything else is the project's)."""
    if mode in ("ours", "ours-unconfigured-window"):
        return {}
    if mode == "predecessor":
        return {"BUDGET_ENABLED": False, "AUTOTHROTTLE_ENABLED": False,
                "DOWNLOAD_DELAY": PREDECESSOR_SPACING * scale.window / GITHUB_SEARCH_WINDOW,
                "DOWNLOAD_DELAY_JITTER": 0, "CONCURRENT_REQUESTS_PER_DOMAIN": 1}
    if mode == "autothrottle":
        return {"BUDGET_ENABLED": False, "AUTOTHROTTLE_ENABLED": True}
    raise ValueError(mode)


def write_config(home: Path, fake: FakeServer, scale: Scale, mode: str) -> Path:
    # "huge" queries page for 100 pages of 10: no worker runs out of work within the run.
    queries = [f"huge bench{i}" for i in range(scale.workers * scale.queries_per_worker)]
    config = {
        "data_dir": str(home / "data"),
        "round_interval": 1,
        "stop_timeout": 10,
        "github": {"web_url": fake.url("web"), "api_url": fake.url("api"),
                   "web_min_interval": 0,
                   "limits": {"search": {"limit": scale.limit, "window": (
                       GITHUB_SEARCH_WINDOW if mode == "ours-unconfigured-window"
                       else scale.window)}}},
        "spiders": {
            "search": {"weight": 1, "queries": queries, "per_page": 10,
                       "settings": mode_settings(mode, scale)},
            "trending": {"weight": 0},
            "docs": {"weight": 0},
        },
    }
    path = home / "collector.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def search_requests(fake: FakeServer) -> list[dict[str, Any]]:
    requests = [r for r in fake.stats()["requests"] if r["path"].startswith("/search/")]
    return sorted(requests, key=lambda r: r["t"])



def stop_runner(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=40)
    except subprocess.TimeoutExpired:
        kill_tree(process.pid)
        process.wait()


def run_mode(mode: str, scale: Scale, home: Path) -> dict[str, Any]:
    fake = start_fake_github(home / "fake", search_limit=scale.limit, search_window=scale.window)
    try:
        config = write_config(home, fake, scale, mode)
        log = (home / "runner.out").open("wb")
        runner = subprocess.Popen(
            [sys.executable, "-m", "runner", "--workers", str(scale.workers), "--spiders",
             "search", "--force"],
            cwd=home, env=collector_env(config), stdout=log, stderr=subprocess.STDOUT)
        started = time.time()
        try:
            first = None
            while first is None:
                if runner.poll() is not None:
                    raise RuntimeError(f"{mode}: runner exited with {runner.returncode}; "
                                       f"see {home / 'runner.out'}")
                if time.time() - started > 120:
                    raise RuntimeError(f"{mode}: no search request within 120 s")
                requests = search_requests(fake)
                first = requests[0]["t"] if requests else None
                time.sleep(0.2)
            duration = scale.windows * scale.window
            time.sleep(max(0.0, first + duration - time.time()))
        finally:
            stop_runner(runner)
            log.close()
        stats = fake.stats()
        return measure(mode, scale, search_requests(fake), stats, first, duration,
                       startup=first - started)
    finally:
        fake.stop()


def measure(mode: str, scale: Scale, requests: list[dict[str, Any]], stats: dict[str, Any],
            first: float, duration: float, startup: float) -> dict[str, Any]:
    end = first + duration
    span = [r for r in requests if first <= r["t"] < end]
    answered = sum(1 for r in span if r["status"] in (200, 304))
    limited = sum(1 for r in span if r["status"] in (403, 429))
    budget = duration / scale.window * scale.limit
    complete = [w for w in fake_windows(span, scale.window) if w[1] <= end]
    in_windows = sum(1 for r in span if r["status"] in (200, 304)
                     and complete and complete[0][0] <= r["t"] < complete[-1][1])
    return {
        "mode": mode,
        "settings": mode_settings(mode, scale),
        "startup_s": round(startup, 1),
        "requests": len(span),
        "answered": answered,
        "violations": limited,
        "budget": budget,
        "budget_used": answered / budget,
        "fake_windows": len(complete),
        "budget_used_fake_windows": (in_windows / (len(complete) * scale.limit)
                                     if complete else None),
        "fake_violations_whole_run": stats["violations"] + stats["secondary_violations"],
        "max_concurrency": stats["max_concurrency"],
    }


def render(results: dict[str, Any]) -> str:
    scale = results["scale"]
    rows = results["modes"]
    ours = next((r for r in rows if r["mode"] == "ours"), None)
    table = []
    for r in rows:
        used_vs = ratio(r["budget_used"], ours["budget_used"]) if ours else None
        viol_vs = None
        if ours is not None:
            viol_vs = (f"{r['violations'] / ours['violations']:.1f}×" if ours["violations"]
                       else ("=" if r["violations"] == 0 else f"+{r['violations']}"))
        fake_used = r["budget_used_fake_windows"]
        table.append([
            r["mode"], r["requests"], r["answered"], f"{r['budget_used']:.1%}",
            f"{fake_used:.1%}" if fake_used is not None else "—", r["violations"],
            f"{used_vs:.2f}×" if used_vs is not None else "—", viol_vs or "—",
        ])
    head = (f"GitHub budget: {scale['workers']} workers, {scale['windows']} windows of "
            f"{scale['limit']} search requests per {scale['window']:g} s "
            f"(budget {rows[0]['budget']:.0f} answers) — {results['machine_summary']}")
    notes = ("budget used = answers 200/304 ÷ (windows × limit) on the wall clock; "
             "'fake windows' = over the windows the fake opened (whole-second resets: each "
             f"lasts up to 1 s longer, so the wall-clock ceiling is "
             f"{scale['window'] / (scale['window'] + 1):.0%}); violations = 403/429 answers")
    headers = ["contender", "sent", "answered", "budget used", "of fake windows",
               "violations", "used vs ours", "violations vs ours"]
    return "\n".join([head, format_table(headers, table), notes])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.budget",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=tuple(SCALES), default="full")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    scale = SCALES[args.scale]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"unknown mode {unknown[0]!r}; choose from {', '.join(MODES)}")
    machine = machine_info()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-budget-") as tmp:
        for mode in modes:
            began = time.time()
            print(f"budget: {mode} ...", flush=True)
            rows.append(run_mode(mode, scale, Path(tmp) / mode))
            print(f"budget: {mode} done in {time.time() - began:.0f} s", flush=True)
    results = {"scale": {"name": args.scale, **asdict(scale)}, "machine": machine,
               "machine_summary": describe_machine(machine), "modes": rows,
               "repo": str(REPO_ROOT)}
    return publish(args.out or default_results("budget", args.scale), results, render)


if __name__ == "__main__":
    raise SystemExit(main())
