"""Memory of the pre-forking runner against as many cold ``scrapy crawl`` processes (issue 3).

    python -m benchmarks.memory [--scale tiny|full] [--workers 20] [--rounds 5,50]

Three phases against the project's fake docs host (``full``: 20 sites × 1500 pages, 100 ms ±
50% per response, so every worker is still crawling when measured):

1. ``runner``: ``python -m runner --workers 20 --spiders docs`` (one site per worker). Once
   every site's start URL has been requested (the fake host timestamps each request), wait a
   few seconds, then sample: the PSS of the whole runner tree (parent + workers), each
   worker's USS and PSS. The time from starting the runner until the last start URL was
   requested is "start → all crawling".
2. ``cold``: the same 20 shards as 20 separate ``scrapy crawl docs -a shard=i/20`` processes,
   started together (the same config layout, in a separate home), measured the same way.
3. ``rounds``: the runner with ``round_interval: 0`` and ``refresh_after: 0`` on tiny sites
   (20 pages each, no latency), so each round is the same short crawl and 50 rounds take a few
   minutes. The tree PSS is sampled every 0.25 s; "after round r" is its mean over the 6 s
   after every worker has finished r rounds (``status.json``): workers are not in lockstep, so
   a window averages over their start-up and crawling phases alike. The runner parent's own
   PSS and USS are reported too: it is the one process that lives for weeks (its PSS moves
   with the number of live children sharing its pages; its USS is what a leak would grow).

Every figure is measured in the same run; nothing is asserted (see ``tests/`` for behaviour).
Results: ``benchmarks/results/memory.json`` (``memory-tiny.json`` for ``--scale tiny``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from benchmarks.common import (
    MB,
    PYTHON,
    REPO_ROOT,
    MemorySampler,
    ProcMemory,
    collector_env,
    default_results,
    describe_load,
    describe_machine,
    fmt,
    format_table,
    machine_info,
    runner_command,
    tree_memory,
    worker_states,
    write_collector_config,
    write_json,
)

# The collector's own defaults, minus politeness a loopback host does not need.
MEMORY_SETTINGS = {"CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 4}
TREE_PSS_TARGET_MB = 650
RATIO_TARGET = 0.45
ROUNDS_TOLERANCE = 0.05


@dataclass(frozen=True, slots=True)
class Scale:
    workers: int
    pages: int
    latency_ms: float
    settle_s: float
    samples: int
    sample_every_s: float
    round_workers: int
    round_pages: int
    rounds: tuple[int, int]
    round_window_s: float
    timeout: float


SCALES = {
    "tiny": Scale(workers=2, pages=200, latency_ms=100, settle_s=0.5, samples=3,
                  sample_every_s=0.3, round_workers=2, round_pages=5, rounds=(2, 8),
                  round_window_s=1.0, timeout=60),
    "full": Scale(workers=20, pages=1500, latency_ms=100, settle_s=5.0, samples=5,
                  sample_every_s=1.0, round_workers=20, round_pages=20, rounds=(5, 50),
                  round_window_s=6.0, timeout=900),
}


def mb(value: float) -> float:
    return round(value / MB, 1)


# --- phases 1 and 2: all workers crawling --------------------------------------------------------


def start_times(fake: Any, sites: int) -> dict[int, float]:
    """Server time of the first request for each site's start URL."""
    wanted = {f"/site{k}/": k for k in range(sites)}
    first: dict[int, float] = {}
    for request in fake.stats()["requests"]:
        k = wanted.get(request["path"])
        if k is not None and (k not in first or request["t"] < first[k]):
            first[k] = float(request["t"])
    return first


def site_counts(fake: Any) -> Counter[str]:
    counts: Counter[str] = Counter()
    for path, n in fake.stats()["counts"].items():
        if path.startswith("/site"):
            counts[path.split("/")[1]] += n
    return counts


def failure_tail(log: Path) -> str:
    """The end of a phase's output and the error lines of its crawl logs, on one line."""
    lines = log.read_text(errors="replace").strip().splitlines()[-5:]
    for crawl_log in sorted((log.parent / "data" / "logs").glob("docs-*.log")):
        lines += [f"{crawl_log.name}: {line}" for line in crawl_log.read_text(
            errors="replace").strip().splitlines()[-3:] if "Error" in line or "ERROR" in line]
    return " | ".join(lines)


MAX_RESTARTS = 3


def wait_all_crawling(fake: Any, sites: int, procs: list[subprocess.Popen[bytes]],
                      timeout: float, log: Path,
                      restart: Callable[[int], subprocess.Popen[bytes]] | None = None,
                      restarts: list[str] | None = None) -> dict[int, float]:
    """Until every site's start URL has been requested. A process that exits first is an error,
    or, with ``restart``, started again like a supervisor would (what failed goes to
    ``restarts``; the time to all crawling then includes the restart)."""
    deadline = time.time() + timeout
    while True:
        first = start_times(fake, sites)
        if len(first) == sites:
            return first
        dead = [i for i, p in enumerate(procs) if p.poll() is not None]
        if dead and restart is not None and restarts is not None \
                and len(restarts) + len(dead) <= MAX_RESTARTS:
            for i in dead:
                restarts.append(f"process {i} exited {procs[i].returncode}: "
                                f"{failure_tail(log)}")
                procs[i] = restart(i)
            continue
        if dead:
            raise RuntimeError(f"{len(dead)} process(es) exited before all sites were crawling "
                               f"(exit {procs[dead[0]].returncode}): {failure_tail(log)}")
        if time.time() > deadline:
            raise RuntimeError(f"only {len(first)} of {sites} sites crawling after {timeout} s")
        time.sleep(0.25)


def sample_all_crawling(fake: Any, roots: list[int], scale: Scale,
                        sites: int) -> dict[str, Any]:
    time.sleep(scale.settle_s)
    before = site_counts(fake)
    samples: list[list[ProcMemory]] = []
    for i in range(scale.samples):
        if i:
            time.sleep(scale.sample_every_s)
        samples.append(tree_memory(roots))
    after = site_counts(fake)
    crawling = sum(1 for k in range(sites) if after[f"site{k}"] > before[f"site{k}"])
    totals = [sum(p.pss for p in s) for s in samples]
    last = samples[-1]
    return {"samples": len(samples), "totals_mb": [mb(t) for t in totals],
            "tree_pss_mb": mb(statistics.median(totals)), "tree_pss_max_mb": mb(max(totals)),
            "processes": len(last), "sites_crawling_during_measurement": crawling,
            "last": last}


def describe_procs(procs: list[ProcMemory], parent: int | None) -> dict[str, Any]:
    workers = [p for p in procs if p.pid != parent]
    uss = sorted(p.uss for p in workers)
    pss = sorted(p.pss for p in workers)
    out: dict[str, Any] = {
        "workers": len(workers),
        "worker_uss_mb": {"median": mb(statistics.median(uss)), "min": mb(uss[0]),
                          "max": mb(uss[-1])} if uss else None,
        "worker_pss_mb": {"median": mb(statistics.median(pss)), "min": mb(pss[0]),
                          "max": mb(pss[-1])} if pss else None,
    }
    top = next((p for p in procs if p.pid == parent), None)
    if top is not None:
        out["parent_pss_mb"] = mb(top.pss)
        out["parent_uss_mb"] = mb(top.uss)
    return out


def stop(procs: list[subprocess.Popen[bytes]], timeout: float = 40) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.time() + timeout
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


ALL_AT_ONCE = "min_concurrency"
"""The runner phases let every worker crawl at once (``autoscale.min_concurrency`` = the plan):
what is measured is the tree the memory guard plans for, not what the autoscaled pool chooses
on this machine's CPU."""


def phase_runner(fake: Any, home: Path, urls: list[str], scale: Scale) -> dict[str, Any]:
    config = write_collector_config(home, urls, settings=MEMORY_SETTINGS,
                                    max_pages=scale.pages + 10,
                                    autoscale={ALL_AT_ONCE: len(urls)})
    fake.control(reset_stats=True)
    log = open(home / "runner.out", "wb")  # noqa: SIM115 - closed after the run
    with log:
        started = time.time()
        runner = subprocess.Popen(
            [*runner_command(), "--config", str(config),
             "--workers", str(len(urls)),
             "--spiders", "docs"], cwd=home, env=collector_env(config),
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            first = wait_all_crawling(fake, len(urls), [runner], scale.timeout,
                                      home / "runner.out")
            measured = sample_all_crawling(fake, [runner.pid], scale, len(urls))
        finally:
            stop([runner])
    last = measured.pop("last")
    return {**measured, **describe_procs(last, runner.pid),
            "start_to_all_crawling_s": round(max(first.values()) - started, 2),
            "start_to_first_crawling_s": round(min(first.values()) - started, 2)}


def phase_cold(fake: Any, home: Path, urls: list[str], scale: Scale) -> dict[str, Any]:
    config = write_collector_config(home, urls, settings=MEMORY_SETTINGS,
                                    max_pages=scale.pages + 10)
    fake.control(reset_stats=True)
    env = collector_env(config)
    n = len(urls)
    restarts: list[str] = []
    log = open(home / "crawls.out", "wb")  # noqa: SIM115 - closed after the run

    def start(i: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen([PYTHON, "-m", "scrapy", "crawl", "docs", "-a", f"shard={i}/{n}"],
                                cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)

    procs: list[subprocess.Popen[bytes]] = []
    with log:
        started = time.time()
        try:
            procs += [start(i) for i in range(n)]
            first = wait_all_crawling(fake, n, procs, scale.timeout, home / "crawls.out",
                                      start, restarts)
            measured = sample_all_crawling(fake, [p.pid for p in procs], scale, n)
        finally:
            stop(procs)
    last = measured.pop("last")
    return {**measured, **describe_procs(last, None),
            "start_to_all_crawling_s": round(max(first.values()) - started, 2),
            "start_to_first_crawling_s": round(min(first.values()) - started, 2),
            "restarted": restarts}


# --- phase 3: rounds -----------------------------------------------------------------------------


def slot_rounds(status_file: Path) -> list[int] | None:
    try:
        workers = json.loads(status_file.read_text(encoding="utf-8"))["workers"]
    except (OSError, ValueError, KeyError):
        return None
    return [int(w.get("rounds") or 0) for w in workers]


def phase_rounds(fake: Any, home: Path, urls: list[str], scale: Scale) -> dict[str, Any]:
    early, late = scale.rounds
    config = write_collector_config(home, urls, settings=MEMORY_SETTINGS,
                                    max_pages=scale.round_pages + 10, refresh_after=0,
                                    autoscale={ALL_AT_ONCE: len(urls)})
    status_file = home / "data" / "state" / "status.json"
    reached: dict[int, float] = {}  # round → when every worker had finished it
    parent: list[tuple[float, int, int]] = []  # (t, pss, uss) of the runner itself
    closed: list[tuple[float, int, int]] = []  # (t, mean PSS, mean USS) of workers at close
    log = open(home / "runner.out", "wb")  # noqa: SIM115 - closed after the run
    with log:
        runner = subprocess.Popen(
            [*runner_command(), "--config", str(config),
             "--workers", str(len(urls)),
             "--spiders", "docs"], cwd=home, env=collector_env(config),
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        sampler = MemorySampler(lambda: [runner.pid], 0.25).start()
        parent_proc = psutil.Process(runner.pid)
        deadline = time.time() + scale.timeout
        try:
            while True:
                now = sampler.elapsed()
                rounds = slot_rounds(status_file)
                if rounds and len(rounds) == len(urls):
                    for r in (early, late):
                        if min(rounds) >= r:
                            reached.setdefault(r, now)
                if late in reached and now >= reached[late] + scale.round_window_s:
                    break
                with contextlib.suppress(psutil.Error):
                    info = parent_proc.memory_full_info()
                    parent.append((now, int(getattr(info, "pss", info.uss)), int(info.uss)))
                at_close = [w for w in worker_states(home / "data") if w.get("finished")]
                if at_close:
                    closed.append((now, int(MB * statistics.mean(w["pss_mb"] for w in at_close)),
                                   int(MB * statistics.mean(w["uss_mb"] for w in at_close))))
                if runner.poll() is not None:
                    raise RuntimeError(f"the runner exited ({runner.returncode}) during rounds")
                if time.time() > deadline:
                    raise RuntimeError(f"round {late} not reached in {scale.timeout} s")
                time.sleep(0.25)
        finally:
            sampler.stop()
            stop([runner])

    def mean_in(values: list[tuple[float, int]], t0: float) -> float | None:
        inside = [v for t, v in values if t0 <= t <= t0 + scale.round_window_s]
        return mb(statistics.mean(inside)) if inside else None

    series = {
        "tree_pss_mb": [(t, pss) for t, pss, _ in sampler.samples],
        "parent_pss_mb": [(t, pss) for t, pss, _ in parent],
        "parent_uss_mb": [(t, uss) for t, _, uss in parent],
        # Each worker's PSS/USS as it closed its last round (its state file): no churn.
        "worker_pss_at_close_mb": [(t, pss) for t, pss, _ in closed],
        "worker_uss_at_close_mb": [(t, uss) for t, _, uss in closed],
    }
    out: dict[str, Any] = {"workers": len(urls), "rounds": [early, late],
                           "window_s": scale.round_window_s,
                           "duration_s": round(sampler.elapsed(), 1)}
    for label, r in (("early", early), ("late", late)):
        out[label] = {"round": r, "reached_at_s": round(reached[r], 1),
                      **{key: mean_in(values, reached[r]) for key, values in series.items()}}
    for key in series:
        a, b = out["early"][key], out["late"][key]
        out[f"{key}_change"] = round((b - a) / a, 4) if a and b else None
    return out


# --- main ----------------------------------------------------------------------------------------


def run(scale_name: str, workers: int | None, rounds: tuple[int, int] | None,
        phases: list[str]) -> dict[str, Any]:
    from dataclasses import replace

    from tests.support.fakes.launcher import start_fake_docs

    scale = SCALES[scale_name]
    if workers:
        scale = replace(scale, workers=workers, round_workers=workers)
    if rounds:
        scale = replace(scale, rounds=rounds)
    work = Path(tempfile.mkdtemp(prefix="hubcollect-memory-"))
    results: dict[str, Any] = {
        "benchmark": "memory", "scale": scale_name, "workers": scale.workers,
        "pages_per_site": scale.pages, "latency_ms": scale.latency_ms, "jitter": 0.5,
        "settings": MEMORY_SETTINGS, "machine": machine_info(),
        "pydantic_installed": importlib.util.find_spec("pydantic") is not None,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    try:
        if {"runner", "cold"} & set(phases):
            fake = start_fake_docs(work / "fake", host="127.0.0.2", sites=scale.workers,
                                   pages=scale.pages, page_kb=6, latency_ms=scale.latency_ms,
                                   jitter=0.5)
            try:
                urls = [f"{fake.url()}/site{k}/" for k in range(scale.workers)]
                for name, phase in (("runner", phase_runner), ("cold", phase_cold)):
                    if name in phases:
                        print(f"[memory] {name}: {scale.workers} workers …", flush=True)
                        results[name] = phase(fake, work / name, urls, scale)
            finally:
                fake.stop()
        if "rounds" in phases:
            fake = start_fake_docs(work / "fake-rounds", host="127.0.0.2",
                                   sites=scale.round_workers, pages=scale.round_pages, page_kb=6)
            try:
                urls = [f"{fake.url()}/site{k}/" for k in range(scale.round_workers)]
                print(f"[memory] rounds: {scale.round_workers} workers to round "
                      f"{scale.rounds[1] + 1} …", flush=True)
                results["rounds"] = phase_rounds(fake, work / "rounds", urls, scale)
            finally:
                fake.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    add_verdicts(results)
    return results


def add_verdicts(results: dict[str, Any]) -> None:
    runner, cold = results.get("runner"), results.get("cold")
    verdicts: dict[str, Any] = {}
    if runner:
        verdicts["tree_pss_within_650_mb"] = runner["tree_pss_mb"] <= TREE_PSS_TARGET_MB
    if runner and cold:
        share = runner["tree_pss_mb"] / cold["tree_pss_mb"]
        results["ratio_tree_pss"] = round(share, 3)
        results["ratio_start_to_all_crawling"] = round(
            runner["start_to_all_crawling_s"] / cold["start_to_all_crawling_s"], 3)
        verdicts["tree_pss_within_45_percent"] = share <= RATIO_TARGET
    rounds = results.get("rounds")
    if rounds and rounds.get("tree_pss_mb_change") is not None:
        verdicts["rounds_within_5_percent"] = abs(rounds["tree_pss_mb_change"]) <= \
            ROUNDS_TOLERANCE
    results["targets_met"] = verdicts


def render(results: dict[str, Any]) -> str:
    n = results["workers"]
    lines = [f"memory ({results['scale']}: {n} docs workers, {results['pages_per_site']} pages "
             f"per site, {results['latency_ms']:.0f} ms ± 50% per response) on "
             f"{describe_machine(results['machine'])}"]
    if describe_load(results):
        lines[0] += f"; {describe_load(results)}"
    runner, cold = results.get("runner"), results.get("cold")
    if runner or cold:
        def col(phase: dict[str, Any] | None, key: str, sub: str | None = None) -> str:
            if not phase or phase.get(key) is None:
                return "—"
            value = phase[key][sub] if sub else phase[key]
            return fmt(float(value), 1)

        def spread(phase: dict[str, Any] | None) -> str:
            if not phase or not phase.get("worker_uss_mb"):
                return "—"
            return f"{col(phase, 'worker_uss_mb', 'min')}–{col(phase, 'worker_uss_mb', 'max')}"

        def share(key: str, sub: str | None = None) -> str:
            try:
                a = runner[key][sub] if sub else runner[key]  # type: ignore[index]
                b = cold[key][sub] if sub else cold[key]  # type: ignore[index]
                return f"{100 * a / b:.0f}%"
            except (TypeError, KeyError, ZeroDivisionError):
                return "—"

        rows = [
            ["tree PSS while all crawling (MB)", col(runner, "tree_pss_mb"),
             col(cold, "tree_pss_mb"), share("tree_pss_mb")],
            ["  max of the samples (MB)", col(runner, "tree_pss_max_mb"),
             col(cold, "tree_pss_max_mb"), share("tree_pss_max_mb")],
            ["runner parent PSS / USS (MB)",
             f"{col(runner, 'parent_pss_mb')} / {col(runner, 'parent_uss_mb')}", "—", ""],
            ["worker USS median (MB)", col(runner, "worker_uss_mb", "median"),
             col(cold, "worker_uss_mb", "median"), share("worker_uss_mb", "median")],
            ["worker USS min–max (MB)", spread(runner), spread(cold), ""],
            ["worker PSS median (MB)", col(runner, "worker_pss_mb", "median"),
             col(cold, "worker_pss_mb", "median"), share("worker_pss_mb", "median")],
            ["start → first site crawling (s)", col(runner, "start_to_first_crawling_s"),
             col(cold, "start_to_first_crawling_s"), share("start_to_first_crawling_s")],
            ["start → all sites crawling (s)", col(runner, "start_to_all_crawling_s"),
             col(cold, "start_to_all_crawling_s"), share("start_to_all_crawling_s")],
            ["sites crawling while measured",
             f"{runner['sites_crawling_during_measurement']}/{n}" if runner else "—",
             f"{cold['sites_crawling_during_measurement']}/{n}" if cold else "—", ""],
        ]
        lines.append(format_table(["", f"runner --workers {n}", f"{n} × scrapy crawl",
                                   "runner/cold"], rows))
    if results.get("pydantic_installed"):
        lines.append("  note: pydantic is installed here (crawlee, of the bench extra, brings it) "
                     "and itemadapter imports it into every Scrapy process: the cold processes "
                     "pay for it, the runner's workers share it. A collector install has no "
                     "pydantic: run this from a venv with `pip install -e .` for its figures")
    for restart in (cold or {}).get("restarted", []):
        lines.append(f"  note: a cold `scrapy crawl` failed at start and was started again "
                     f"(included in its start → all crawling): {restart[:300]}")
    rounds = results.get("rounds")
    if rounds:
        early, late = rounds["early"], rounds["late"]
        change = rounds.get("tree_pss_mb_change")
        pchange = rounds.get("parent_pss_mb_change")
        uchange = rounds.get("parent_uss_mb_change")
        wchange = rounds.get("worker_uss_at_close_mb_change")
        lines.append(
            f"rounds ({rounds['workers']} workers, round_interval 0, {rounds['duration_s']} s): "
            f"tree PSS after round {early['round']} {fmt(early['tree_pss_mb'], 1)} MB, after "
            f"round {late['round']} {fmt(late['tree_pss_mb'], 1)} MB"
            + (f" ({change:+.1%})" if change is not None else "")
            + f"; runner parent PSS {fmt(early['parent_pss_mb'], 1)} → "
            f"{fmt(late['parent_pss_mb'], 1)} MB"
            + (f" ({pchange:+.1%})" if pchange is not None else "")
            + f", USS {fmt(early['parent_uss_mb'], 1)} → {fmt(late['parent_uss_mb'], 1)} MB"
            + (f" ({uchange:+.1%})" if uchange is not None else "")
            + f"; worker USS at close {fmt(early.get('worker_uss_at_close_mb'), 1)} → "
            f"{fmt(late.get('worker_uss_at_close_mb'), 1)} MB"
            + (f" ({wchange:+.1%})" if wchange is not None else "")
            + f" (means over {rounds['window_s']:.0f} s from the moment every worker had "
            "finished that round)")
    targets = results.get("targets_met", {})
    labels = {
        "tree_pss_within_650_mb": f"runner tree PSS ≤ {TREE_PSS_TARGET_MB} MB",
        "tree_pss_within_45_percent": f"runner tree PSS ≤ {RATIO_TARGET:.0%} of {n} cold "
                                      "processes'",
        "rounds_within_5_percent": f"tree PSS after round {rounds['rounds'][1] if rounds else '?'}"
                                   f" within {ROUNDS_TOLERANCE:.0%} of round "
                                   f"{rounds['rounds'][0] if rounds else '?'}",
    }
    for key, met in targets.items():
        lines.append(f"  target: {labels[key]}: {'met' if met else 'NOT met'}")
    return "\n".join(lines)


def _rounds(text: str) -> tuple[int, int]:
    early, late = (int(x) for x in text.split(","))
    if not 1 <= early < late:
        raise argparse.ArgumentTypeError("give two round numbers, early < late, e.g. 5,50")
    return early, late


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="full")
    parser.add_argument("--workers", type=int, default=None,
                        help="workers (and cold processes); default 20 full, 2 tiny")
    parser.add_argument("--rounds", type=_rounds, default=None,
                        help="the two rounds compared (default 5,50 full; 2,8 tiny)")
    parser.add_argument("--phases", default="runner,cold,rounds")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON results (default: benchmarks/results/memory.json, or "
                             "memory-tiny.json for --scale tiny)")
    args = parser.parse_args(argv)
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    results = run(args.scale, args.workers, args.rounds, phases)
    results["command"] = " ".join(["python -m benchmarks.memory", *(argv or sys.argv[1:])])
    results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    out = args.out or default_results("memory", args.scale)
    write_json(out, results)
    print()
    print(render(results))
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
