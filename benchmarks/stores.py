"""``python -m benchmarks.stores``: the dedup stores' cost per item, one shared store per spider
against one private store per worker (the layout before issue 15).

20 forked workers each record N items the way a docs worker does: a content-hash claim and
confirm (``SqliteContentHashStore``) and a deltafetch lookup, then its links and record in one
transaction (``DeltaFetchStore.record``, as the middleware writes a page whose item passed before
its links were read) — the real store classes on real files in WAL mode. ``--work-ms`` adds
that much CPU per item between writes (a docs page costs ≈ 3 ms of CPU to fetch and parse on
the throughput benchmark's box: 339 pages per CPU-second with 20 workers), so the second table
is the contention a crawl meets; ``--work-ms 0`` is the stores alone, the worst case.

Printed and written to ``benchmarks/results/stores.json``: items/s over all workers, CPU
seconds of the workers, CPU per item, and the shared layout's extra CPU per item as a share of
a page's CPU in ``python -m benchmarks.throughput``.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import resource
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    RESULTS_DIR,
    describe_machine,
    fmt,
    format_table,
    machine_info,
    write_json,
)
from scraper.dedup.sqlitehashes import SqliteContentHashStore
from scraper.dedup.sqliteurls import STORE_KIND, DeltaFetchStore

PAGE_CPU_MS = 1000 / 339
"""CPU per page of a 20-worker runner in the throughput benchmark (README, "Throughput")."""
LINKS = [f"https://docs.example.org/site/page{i}.html" for i in range(12)]


def _busy(ms: float) -> None:
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass


def _worker(index: int, root: str, shared: bool, items: int, work_ms: float,
            start: Any) -> None:
    name = "docs" if shared else f"docs-{index}of20"
    content = SqliteContentHashStore(Path(root) / "contenthash" / f"{name}.sqlite")
    delta = DeltaFetchStore(Path(root) / "deltafetch" / f"{name}.sqlite", kind=STORE_KIND)
    start.wait()
    for n in range(items):
        _busy(work_ms)
        key = hashlib.sha1(f"{index}:{n}".encode()).digest()
        digest = hashlib.sha256(key).hexdigest()
        delta.get(key)  # is the page collected?
        if content.claim(digest):
            content.confirm(digest, "2026-01-01T00:00:00Z")
        delta.record(key, str(time.time()), LINKS)  # the page's links and record, one write
    content.close()
    delta.close()


WORKER_TIMEOUT_S = 120.0


def _give_up(procs: list[Any], what: str) -> None:
    for proc in procs:
        if proc.exitcode is None:
            proc.kill()
            proc.join()
    codes = [proc.exitcode for proc in procs]
    raise SystemExit(f"benchmarks.stores: the workers {what} (exit codes {codes})")


def run(shared: bool, workers: int, items: int, work_ms: float) -> dict[str, Any]:
    root = tempfile.mkdtemp(prefix="bench-stores-")
    try:
        for kind in ("contenthash", "deltafetch"):
            os.makedirs(Path(root) / kind)
        context = multiprocessing.get_context("fork")
        start = context.Barrier(workers + 1)
        procs = [context.Process(target=_worker, args=(i, root, shared, items, work_ms, start))
                 for i in range(workers)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        for proc in procs:
            proc.start()
        try:  # a worker that died before the barrier would leave the others waiting forever
            start.wait(timeout=WORKER_TIMEOUT_S)
        except threading.BrokenBarrierError:
            _give_up(procs, "did not all reach the start")
        began = time.perf_counter()
        for proc in procs:
            proc.join(timeout=max(0.0, began + WORKER_TIMEOUT_S - time.perf_counter()))
        if any(proc.exitcode is None for proc in procs):
            _give_up(procs, f"did not finish in {WORKER_TIMEOUT_S:.0f} s")
        wall = time.perf_counter() - began
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if any(proc.exitcode != 0 for proc in procs):
            _give_up(procs, "failed")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        total = workers * items
        return {"layout": "shared" if shared else "private", "workers": workers,
                "items": total, "work_ms": work_ms, "wall_s": wall, "items_per_s": total / wall,
                "cpu_s": cpu, "cpu_ms_per_item": 1000 * cpu / total}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--items", type=int, default=1000, help="per worker")
    parser.add_argument("--work-ms", type=float, nargs="+", default=[0.0, PAGE_CPU_MS])
    parser.add_argument("--repeat", type=int, default=3, help="best of")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "stores.json")
    args = parser.parse_args(argv)
    info = machine_info()
    print(f"stores: {args.workers} workers × {args.items} items; {describe_machine(info)}",
          flush=True)
    runs = []
    for work_ms in args.work_ms:
        for shared in (False, True):
            # Best of --repeat: other work on a shared machine only ever slows a run down.
            best = min((run(shared, args.workers, args.items, work_ms)
                        for _ in range(args.repeat)), key=lambda r: r["cpu_s"])
            runs.append(best)
    rows = []
    for private, shared in zip(runs[::2], runs[1::2], strict=True):
        extra = shared["cpu_ms_per_item"] - private["cpu_ms_per_item"]
        for result in (private, shared):
            rows.append([f"{result['layout']}, {fmt(result['work_ms'], 1)} ms work/item",
                         fmt(result["items_per_s"]), fmt(result["cpu_s"], 2),
                         fmt(result["cpu_ms_per_item"], 3),
                         fmt(result["items_per_s"] / private["items_per_s"], 3)])
        shared["extra_cpu_ms_per_item"] = extra
        shared["share_of_page_cpu"] = extra / PAGE_CPU_MS
        shared["throughput_ratio"] = shared["items_per_s"] / private["items_per_s"]
    print(format_table(["layout", "items/s", "CPU s", "CPU ms/item", "× private"], rows))
    for shared in runs[1::2]:
        print(f"work {fmt(shared['work_ms'], 1)} ms: shared store costs "
              f"{fmt(shared['extra_cpu_ms_per_item'], 3)} ms CPU more per item = "
              f"{100 * shared['share_of_page_cpu']:.1f}% of a page's CPU "
              f"({fmt(PAGE_CPU_MS, 2)} ms); items/s × {shared['throughput_ratio']:.3f}")
    results = {"machine": info, "args": {k: str(v) for k, v in vars(args).items()},
               "runs": runs}
    write_json(args.out, results)
    return results


if __name__ == "__main__":
    main()
