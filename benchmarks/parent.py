"""``python -m benchmarks.parent``: the runner parent's memory and file descriptors over rounds.

The parent is the one process that lives for months; every round it forks a worker, reaps it,
writes status, metrics and size samples. This runs the real ``python -m runner`` against the
project's fake docs host with rounds as short as they get (``round_interval: 0``, ``refresh_after:
0``, one page per site), until its workers have done ``--rounds`` rounds in all (and two samples are
taken), and samples the parent alone (RSS, USS, open descriptors, threads) as the rounds go by.
Flat means: the fewest descriptors open at once in the second half of the rounds no more than
in the first, and the most no more than that and one per worker and the catalog child (a
sample may catch a round's pipe open), RSS never more than ``--rss-slack-mb`` above
the sample taken after the first tenth of the rounds (the warm-up: caches, lazily imported
modules), and its least-squares rise over the rounds after it under ``--max-kb-per-round``.
USS is not used: while a worker shares the parent's pages they are not the parent's alone, so
it swings with every fork.

    python -m benchmarks.parent                       # 1,000 rounds, 2 workers (a few minutes)
    python -m benchmarks.parent --rounds 100          # a quick look
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.common import (
    MB,
    PYTHON,
    RESULTS_DIR,
    collector_env,
    machine_info,
    publish,
    runner_command,
    write_collector_config,
)
from benchmarks.memory import slot_rounds, stop
from tests.support.fakes.launcher import start_fake_docs


def _rss_parts(pid: int) -> dict[str, float]:
    """Anonymous (heap: what a leak grows) and file-backed (mapped files, shared libraries)
    resident memory, from /proc/PID/status."""
    parts = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("RssAnon", "RssFile", "RssShmem"):
            parts[f"{key[3:].lower()}_mb"] = round(int(value.split()[0]) / 1024, 2)
    return parts


def _sample(proc: psutil.Process, rounds: int, t0: float) -> dict[str, Any]:
    with proc.oneshot():
        info = proc.memory_info()
        return {"rounds": rounds, "t_s": round(time.monotonic() - t0, 1),
                "rss_mb": round(info.rss / MB, 2), **_rss_parts(proc.pid),
                "fds": proc.num_fds(), "threads": proc.num_threads(),
                "children": len(proc.children())}


def _slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope: a leak shows as a steady rise, whatever the noise."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / var if var else 0.0


def _probe(path: Path | None) -> dict[str, Any]:
    """The allocator figures the probe thread wrote last (``--allocator``)."""
    try:
        lines = path.read_text().splitlines() if path else []
    except OSError:
        return {}
    return {"allocator": json.loads(lines[-1])} if lines else {}


PROBED = ("heap_bytes", "heap_in_use", "mmapped_bytes", "arenas", "blocks", "RssAnon")


def run(rounds: int, workers: int, samples: int, timeout: float, workdir: Path,
        allocator: bool = False, collect: bool = False) -> dict[str, Any]:
    fake = start_fake_docs(workdir / "fake", host="127.0.0.2", sites=workers, pages=1,
                           page_kb=2)
    try:
        urls = [f"{fake.url()}/site{k}/" for k in range(workers)]
        home = workdir / "home"
        config = write_collector_config(home, urls, max_pages=5, refresh_after=0)
        status_file = home / "data" / "state" / "status.json"
        every = max(1, rounds // samples)
        probe = workdir / "probe.jsonl" if allocator else None
        command = ([PYTHON, "-m", "benchmarks.parentprobe"] if allocator
                   else runner_command())
        extra = {"HUBCOLLECT_PROBE_OUT": str(probe), "HUBCOLLECT_PROBE_EVERY": "2",
                 "HUBCOLLECT_PROBE_COLLECT": "1" if collect else "0"} if allocator else {}
        taken: list[dict[str, Any]] = []
        with open(home / "runner.out", "wb") as log:
            runner = subprocess.Popen(
                [*command, "--config", str(config), "--workers", str(workers),
                 "--spiders", "docs"], cwd=home, env=collector_env(config, **extra),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            parent = psutil.Process(runner.pid)
            t0 = time.monotonic()
            try:
                while True:
                    done = sum(slot_rounds(status_file) or [0])
                    if done >= max(1, len(taken) * every):  # from the first round on
                        with contextlib.suppress(psutil.Error):
                            taken.append({**_sample(parent, done, t0), **_probe(probe)})
                    # A slope needs two samples; status.json is written every 2 s, and on a
                    # fast box one write can already count every round asked for.
                    if done >= rounds and len(taken) >= 2:
                        break
                    if runner.poll() is not None:
                        raise SystemExit(f"the runner exited ({runner.returncode}) after {done} "
                                         f"rounds; see {home / 'runner.out'}")
                    if time.monotonic() - t0 > timeout:
                        raise SystemExit(f"{done} of {rounds} rounds in {timeout:.0f} s")
                    time.sleep(0.05)
            finally:
                stop([runner])
    finally:
        fake.stop()
    warm = next(s for s in taken if s["rounds"] >= rounds // 10)
    later = [s for s in taken if s["rounds"] >= warm["rounds"]]
    half = len(later) // 2
    last = taken[-1]
    return {"rounds": last["rounds"], "workers": workers, "duration_s": last["t_s"],
            "samples": taken,
            "after_warmup": {"rounds": warm["rounds"], "rss_mb": warm["rss_mb"]},
            "last": {"rounds": last["rounds"], "rss_mb": last["rss_mb"]},
            "rss_change_mb": round(last["rss_mb"] - warm["rss_mb"], 2),
            "rss_kb_per_round": round(_slope([(s["rounds"], s["rss_mb"] * 1024)
                                              for s in later]), 3),
            "anon_kb_per_round": round(_slope([(s["rounds"], s.get("anon_mb", 0) * 1024)
                                               for s in later]), 3),
            "rss_max_mb": max(s["rss_mb"] for s in later),
            # A sample may land while a round has its pipe or log open: a leak raises the
            # fewest seen at once, a round open at a sample's instant one sample.
            "fds_min_first_half": min(s["fds"] for s in later[:half or 1]),
            "fds_min_second_half": min(s["fds"] for s in later[half:]),
            "fds_max_first_half": max(s["fds"] for s in later[:half or 1]),
            "fds_max_second_half": max(s["fds"] for s in later[half:]),
            **({"allocator_change": {
                key: later[-1]["allocator"][key] - later[0]["allocator"][key] for key in PROBED
            }} if allocator and "allocator" in later[0] and "allocator" in later[-1] else {}),
            "fds_seen": sorted({s["fds"] for s in taken}),
            "threads_seen": sorted({s["threads"] for s in taken})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.parent", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1000,
                        help="rounds of all workers together (default 1000)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--rss-slack-mb", type=float, default=2.0)
    parser.add_argument("--max-kb-per-round", type=float, default=0.2,
                        help="the steady rise that counts as a leak (default 0.2 KB a round: "
                        "1 MB in 5,000 rounds)")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--allocator", action="store_true",
                        help="run the parent under benchmarks.parentprobe: glibc's heap and "
                        "Python's arenas at every sample (a thread more in the parent)")
    parser.add_argument("--collect", action="store_true",
                        help="--allocator with a full garbage collection before each of its "
                        "samples, so blocks count live objects only")
    parser.add_argument("--out", default=None,
                        help="default benchmarks/results/parent.json (parent-N.json for N "
                        "rounds other than 1000)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-parent-") as tmp:
        result = run(args.rounds, args.workers, args.samples, args.timeout, Path(tmp),
                     args.allocator or args.collect, args.collect)
    # Each round running holds at most one descriptor of the parent's for a moment (its pipe
    # or log), the catalog child one more.
    fds_flat = (result["fds_min_second_half"] <= result["fds_min_first_half"]
                and result["fds_max_second_half"]
                <= result["fds_min_first_half"] + args.workers + 1)
    flat = (fds_flat
            and result["rss_max_mb"] - result["after_warmup"]["rss_mb"] <= args.rss_slack_mb
            and result["rss_kb_per_round"] <= args.max_kb_per_round)
    result = {"machine": machine_info(), "command": " ".join(["python -m benchmarks.parent",
                                                               *sys.argv[1:]]),
              **result, "rss_slack_mb": args.rss_slack_mb, "flat": flat}
    name = "parent.json" if args.rounds == 1000 else f"parent-{args.rounds}.json"
    if args.allocator or args.collect:
        name = name.replace(".json", "-collect.json" if args.collect else "-allocator.json")
    return publish(Path(args.out) if args.out else RESULTS_DIR / name, result, render)


def render(result: dict[str, Any]) -> str:
    lines = [f"{'rounds':>7} {'s':>7} {'RSS MB':>8} {'anon':>7} {'file':>7} {'fds':>4} "
             f"{'threads':>7}"]
    probed = any("allocator" in s for s in result["samples"])
    if probed:
        lines[0] += f" {'heap KB':>8} {'in use':>8} {'mmap KB':>8} {'arenas':>6} {'blocks':>8}"
    for s in result["samples"]:
        line = (f"{s['rounds']:>7} {s['t_s']:>7} {s['rss_mb']:>8} "
                f"{s.get('anon_mb', '-'):>7} {s.get('file_mb', '-'):>7} {s['fds']:>4} "
                f"{s['threads']:>7}")
        if probed and "allocator" in s:
            a = s["allocator"]
            line += (f" {a['heap_bytes'] // 1024:>8} {a['heap_in_use'] // 1024:>8} "
                     f"{a['mmapped_bytes'] // 1024:>8} {a['arenas']:>6} {a['blocks']:>8}")
        lines.append(line)
    if "allocator_change" in result:
        lines.append("allocator, after warm-up → last sample: " + ", ".join(
            f"{key} {value:+,}" for key, value in result["allocator_change"].items()))
    lines.append(f"after warm-up (round {result['after_warmup']['rounds']}) → round "
                 f"{result['last']['rounds']}: RSS {result['rss_change_mb']:+} MB (highest "
                 f"{result['rss_max_mb']} MB, {result['rss_kb_per_round']:+} KB a round), "
                 f"descriptors {result.get('fds_min_first_half', '?')}-"
                 f"{result['fds_max_first_half']} in the first half, "
                 f"{result.get('fds_min_second_half', '?')}-{result['fds_max_second_half']} "
                 f"in the second: "
                 f"{'flat' if result['flat'] else 'NOT flat'}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
