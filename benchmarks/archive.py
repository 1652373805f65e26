"""``python -m benchmarks.archive`` (issue 40): what the page archive costs, against its earlier
form in the same run.

The pages are the real 2026 captures in ``tests/data``, with the values GitHub draws for every
answer drawn again at every fetch, in their own form (``tests/support/fakes/perrequest.py``:
request id, nonces, visitor payload and HMAC, four CSRF tokens on a repository page):

* **distinct pages**: the default plan's 12 repository lists fetched hourly for ``--hours``,
  each fetch a new page (``benchmarks/trendingpages.py``: every star count moved on, a few
  rows coming and going);
* **unchanged fetches**: each list's last page fetched ``--unchanged`` times more, only the
  per-request values new; and the same for the 2026 developers page (5 per-request values, no
  CSRF token).

Both forms get the same bodies in the same order: the zstd frames of
:class:`scraper.trending.archive.FilesystemPageArchive` and the gzip templates it wrote before
(``tests/support/gziparchive.py``). Bytes are the store's files after a WAL checkpoint
(records, indexes and bodies: everything the archive puts on disk), growth over each phase
divided by its fetches; the first fetch of each list (a frame standing alone, the raw head) is
made before measuring, as a collector makes it once. CPU is this process's, around the
spider's sha256 and ``put``. Also measured: reading every body back in order (export, reparse)
and one at random (show). The floor printed is the random bytes drawn per fetch: what any
archive that gives each answer back byte for byte must store.

    python -m benchmarks.archive                   # 12 lists × 24 h, 100 unchanged each (~2 min)
    python -m benchmarks.archive --hours 2 --unchanged 5 --out /tmp/a.json   # a quick look
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS_DIR, fmt, format_table, machine_info, ratio, write_json
from benchmarks.trendingpages import TrendingPages
from scraper.config.collector import CollectorConfig
from scraper.trending.archive import ArchivedPage, FilesystemPageArchive, ParseProfile, body_sha256
from scraper.trending.developers import parse_developers
from scraper.trending.pages import DEVELOPERS, developer_snapshot_rows, parse_profile, snapshot_rows
from scraper.utils.layout import DataLayout
from scraper.utils.stamps import ms_stamp
from tests.support.fakes.perrequest import drawn_bytes, fresh_values
from tests.support.gziparchive import GzipTemplateArchive
from tests.support.paths import DATA

DEVELOPERS_PAGE = DATA / "trending_developers" / "2026-08_all_daily.html"
START_MS = 1_796_083_200_000  # 2026-12-01T00:00:00Z
TARGETS = {"distinct_bytes": 20_000, "unchanged_bytes": 300, "cpu_ms": 5.0}

Fetch = tuple[ArchivedPage, bytes]


def fetches(lists: int, hours: int, unchanged: int, seed: int = 40
            ) -> tuple[list[Fetch], list[Fetch], list[Fetch], list[Fetch]]:
    """(first fetch of each list, distinct pages, unchanged fetches, unchanged developer
    pages), every body with its per-request values drawn anew."""
    rng = random.Random(seed)
    pages = TrendingPages(seed, tokens=False)
    entries = CollectorConfig().trending.start_entries()[:lists]
    clock = iter(range(START_MS, START_MS + 10 ** 12, 1_000))

    def fetch(url: str, key: str, body: bytes, profile: ParseProfile) -> Fetch:
        body = fresh_values(body, rng)
        return ArchivedPage(url, ms_stamp(next(clock)), 200, body_sha256(body), key, "1",
                            profile=profile,
                            headers=(("Content-Type", "text/html; charset=utf-8"),)), body

    first, distinct, last = [], [], {}
    for hour in range(hours + 1):
        for list_id, (language, period, spoken) in enumerate(entries):
            url = f"https://github.com/trending/{language}?since={period}"
            body, rows = pages.page(list_id, period, hour, url)
            # What the spider's parse records with the fetch: the archive sees the rows move.
            last[list_id] = (url, f"{period}|{language}|{spoken}", body,
                             parse_profile(snapshot_rows(rows)))
            (first if hour == 0 else distinct).append(fetch(*last[list_id]))
    same = [fetch(*last[list_id]) for _ in range(unchanged) for list_id in last]
    developers = DEVELOPERS_PAGE.read_bytes()
    url, key = "https://github.com/trending/developers?since=daily", "developers:daily|"
    profile = parse_profile(developer_snapshot_rows(parse_developers(developers, url)),
                            DEVELOPERS)
    first.append(fetch(url, key, developers, profile))
    return first, distinct, same, [fetch(url, key, developers, profile)
                                   for _ in range(unchanged)]


def disk_bytes(root: Path, conn: sqlite3.Connection) -> int:
    """The store's pages in use (not those SQLite freed and will reuse: a head replaced frees
    its pages, which later records fill without the file growing) and the earlier form's
    template files."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (pages,), (free,), (size,) = (conn.execute(f"PRAGMA {name}").fetchone()
                                  for name in ("page_count", "freelist_count", "page_size"))
    return (pages - free) * size + sum(p.stat().st_size for p in root.rglob("*.gz"))


def measure_form(name: str, make: Callable[[Path], Any], phases: dict[str, list[Fetch]],
                 first: list[Fetch], work: Path) -> dict[str, Any]:
    archive = make(work)
    for page, body in first:
        archive.put(page, body)
    out: dict[str, Any] = {}
    for phase, batch in phases.items():
        before = disk_bytes(work, archive._conn)
        cpu = []
        for page, body in batch:
            started = time.process_time()
            body_sha256(body)  # the spider's, before every put
            archive.put(page, body)
            cpu.append(time.process_time() - started)
        grown = disk_bytes(work, archive._conn) - before
        out[phase] = {"fetches": len(batch), "bytes_per_fetch": round(grown / len(batch), 1),
                      "cpu_ms_mean": round(statistics.fmean(cpu) * 1000, 3),
                      "cpu_ms_p95": round(sorted(cpu)[int(len(cpu) * 0.95)] * 1000, 3)}
        print(f"  {name} {phase}: {out[phase]}", flush=True)
    archive.close()
    return out


def _new(work: Path) -> FilesystemPageArchive:
    return FilesystemPageArchive.at(DataLayout(work), "trending")


def _old(work: Path) -> GzipTemplateArchive:
    layout = DataLayout(work)
    return GzipTemplateArchive(layout.archive_dir("trending"), layout.archive_db("trending"))


def read_back(work: Path, sample: int, seed: int = 41) -> dict[str, float]:
    """CPU per body given back: every fetch in time order (export, reparse), and ``sample``
    fetches at random from a fresh process's view (show: no body decoded before)."""
    archive = _new(work)
    try:
        pages = list(archive.pages())
        started = time.process_time()
        for page in pages:
            archive.body(page)
        in_order = (time.process_time() - started) / len(pages)
    finally:
        archive.close()
    rng, times = random.Random(seed), []
    for page in rng.sample(pages, min(sample, len(pages))):
        archive = _new(work)
        started = time.process_time()
        archive.body(page)
        times.append(time.process_time() - started)
        archive.close()
    return {"in_order_ms": round(in_order * 1000, 3),
            "at_random_ms_mean": round(statistics.fmean(times) * 1000, 3),
            "at_random_ms_max": round(max(times) * 1000, 3)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.archive")
    parser.add_argument("--lists", type=int, default=12)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--unchanged", type=int, default=100)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "archive.json")
    args = parser.parse_args(argv)
    first, distinct, same, developers = fetches(args.lists, args.hours, args.unchanged)
    phases = {"distinct": distinct, "unchanged": same, "unchanged_developers": developers}
    results: dict[str, Any] = {
        "machine": machine_info(), "lists": args.lists, "hours": args.hours,
        "unchanged_per_list": args.unchanged,
        "floor_bytes": {"repositories": drawn_bytes(same[0][1]),
                        "developers": drawn_bytes(developers[0][1])},
        "page_bytes": {"repositories": len(same[0][1]), "developers": len(developers[0][1])}}
    with tempfile.TemporaryDirectory(prefix="archive-bench-") as tmp:
        for name, make in (("gzip templates", _old), ("zstd frames", _new)):
            work = Path(tmp) / name.replace(" ", "-")
            results[name] = measure_form(name, make, phases, first, work)
        results["read_back"] = read_back(Path(tmp) / "zstd-frames", sample=30)
    old, new = results["gzip templates"], results["zstd frames"]
    rows = []
    for phase in phases:
        rows.append([phase, old[phase]["bytes_per_fetch"], new[phase]["bytes_per_fetch"],
                     fmt(ratio(new[phase]["bytes_per_fetch"], old[phase]["bytes_per_fetch"]), 3),
                     old[phase]["cpu_ms_mean"], new[phase]["cpu_ms_mean"],
                     new[phase]["cpu_ms_p95"]])
    print(format_table(["phase", "old B/fetch", "new B/fetch", "new/old", "old CPU ms",
                        "new CPU ms", "new p95 ms"], rows))
    print(f"floor (random bytes drawn per fetch): {results['floor_bytes']}")
    print(f"read back: {results['read_back']}")
    verdict = {"distinct_bytes": new["distinct"]["bytes_per_fetch"],
               "unchanged_bytes": new["unchanged"]["bytes_per_fetch"],
               "cpu_ms": max(new[p]["cpu_ms_mean"] for p in phases)}
    results["targets"] = {name: {"target": TARGETS[name], "measured": value,
                                 "met": value <= TARGETS[name]}
                          for name, value in verdict.items()}
    for name, row in results["targets"].items():
        print(f"target {name} <= {row['target']}: {row['measured']} "
              f"({'met' if row['met'] else 'NOT met'})")
    write_json(args.out, results)
    return results


if __name__ == "__main__":
    main()
