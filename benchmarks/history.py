"""``python -m benchmarks.history``: a day, a month and a year of history at the default cadence.

Generates what the collector writes at its defaults (``ROUND_INTERVALS``, hourly segments, the
default plan's shards), in the item format of README "What is written where", then measures at
each size what a long-running collector pays again and again:

* item files (count, bytes per day per spider) and the catalog's size: how long a disk lasts;
* the first catalog build, and an incremental build after one more round;
* every canned Datasette query and the catalog's table pages (count and first rows, and the
  ``trending_observations.full_name`` filter), each against Datasette's 1 s limit;
* ``python -m runner status``, ``watchdog``, ``report``, ``export --format parquet``;
* opening a deltafetch and a content-hash store and one lookup, at 10k, 1M and 5M keys.

The history grows in place, day → month → year; ``--days 1,30`` stops earlier, and
``--search-per-hour`` sets the search items that change per hour (an assumption: see README).

    python -m benchmarks.history                       # 1, 30 and 365 days
    python -m benchmarks.history --days 1,30 --store-keys 10000,1000000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.catalog import PERIODS, WORDS, measure
from benchmarks.common import REPO_ROOT, RESULTS_DIR, machine_info
from runner.catalog import queries
from scraper.config.collector import ROUND_INTERVALS, TrendingConfig

HOUR = 3600
START = 1_798_761_600  # 2027-01-01T00:00:00Z
LISTS = TrendingConfig().start_entries()  # 4 languages × 3 periods, any spoken language
TRENDING_SHARDS = 6
ROWS = 25
DOCS_PAGES = 14 * 2000
"""The default docs sites at their page cap: the pages whose content can change."""
DOCS_CHANGED_PER_DAY = DOCS_PAGES // 7 // 10
"""Pages come back after refresh_after (7 days); one in ten has changed (an assumption)."""
SEARCH_REPOS = 8000
"""The default queries' result sets (topic:web-scraping, language:python stars:>5000)."""


def _stamp(epoch: float, ms: bool = False) -> str:
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch))
    return text + (f".{int(epoch % 1 * 1000):03d}Z" if ms else "Z")


def _segment(epoch: float) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(epoch))


class History:
    """Writes each hour's closed segments, as the defaults' rounds would."""

    def __init__(self, items: Path, search_per_hour: int, seed: int = 27) -> None:
        self.items = items
        self.rng = random.Random(seed)
        self.search_per_hour = search_per_hour
        self.hours = 0
        self.bytes = {"trending": 0, "search": 0, "docs": 0}
        self.repos = [f"owner{n % 997}/{self.rng.choice(WORDS)}-{n}" for n in range(3000)]

    def _write(self, spider: str, shard: str, epoch: float, lines: list[str]) -> None:
        if not lines:
            return
        directory = self.items / spider
        directory.mkdir(parents=True, exist_ok=True)
        data = ("\n".join(lines) + "\n").encode()
        slug = shard.replace("/", "of")
        (directory / f"{spider}-{slug}-{_segment(epoch)}.jsonl").write_bytes(data)
        self.bytes[spider] += len(data)

    def _hash(self) -> str:
        return f"{self.rng.getrandbits(256):064x}"

    def snapshot(self, language: str, period: str, spoken: str, epoch: float) -> str:
        # Lists move slowly: most of a list's repositories stay from one hour to the next.
        day = int(epoch // 86400)
        pool = random.Random(f"{language}{period}{spoken}{day}")
        names = pool.sample(self.repos, ROWS + 5)
        rows = []
        for rank, name in enumerate(sorted(names[:ROWS], key=lambda n: self.rng.random()), 1):
            stars = 100 + hash(name) % 50000 + int(epoch - START) // 600
            rows.append({"rank": rank, "full_name": name, "description": f"{name} tool",
                         "language": "Python", "stars": stars, "forks": stars // 10,
                         "period_stars": 500 - rank, "built_by": ["a", "b"]})
        return json.dumps({
            "spider": "trending", "shard": "0/6", "collected_at": _stamp(epoch),
            "content_hash": self._hash(), "observed_at": _stamp(epoch, ms=True),
            "period": period, "trending_language": language or None,
            "spoken_language_code": spoken or None,
            "url": f"https://github.com/trending/{language}?since={period}", "rows": rows})

    def search(self, epoch: float) -> str:
        n = self.rng.randrange(SEARCH_REPOS)
        name = f"owner{n % 997}/{WORDS[n % len(WORDS)]}-{n}"
        return json.dumps({
            "spider": "search", "shard": "0/1", "collected_at": _stamp(epoch),
            "content_hash": self._hash(), "id": n, "full_name": name,
            "html_url": f"https://github.com/{name}", "description": "a repository",
            "language": "Python", "stargazers_count": 5000 + n + int(epoch - START) // 3600,
            "forks_count": n, "open_issues_count": 4, "topics": ["web-scraping"],
            "license": "MIT", "created_at": "2020-01-01T00:00:00Z",
            "updated_at": _stamp(epoch), "pushed_at": _stamp(epoch), "archived": False,
            "query": "topic:web-scraping"})

    def docs(self, epoch: float) -> str:
        page = self.rng.randrange(DOCS_PAGES)
        text = " ".join(self.rng.choice(WORDS) for _ in range(400))
        return json.dumps({
            "spider": "docs", "shard": "0/8", "collected_at": _stamp(epoch),
            "content_hash": self._hash(), "url": f"https://docs.example.org/p/{page}.html",
            "title": f"Page {page}", "headings": ["Intro", "API"],
            "markdown": f"# Page {page}\n\n## Intro\n\n{text}\n", "text": text,
            "canonical_url": None, "lang": "en", "last_modified": None})

    def hour(self) -> None:
        epoch = START + self.hours * HOUR
        every = {name: int(seconds // HOUR) for name, seconds in ROUND_INTERVALS.items()}
        if self.hours % every["trending"] == 0:
            for shard in range(TRENDING_SHARDS):
                mine = LISTS[shard::TRENDING_SHARDS]
                self._write("trending", f"{shard}/{TRENDING_SHARDS}", epoch + shard,
                            [self.snapshot(*entry, epoch + shard) for entry in mine])
        if self.hours % every["search"] == 0:
            self._write("search", "0/1", epoch, [self.search(epoch + k * 0.01)
                                                 for k in range(self.search_per_hour)])
        if self.hours % every["docs"] == 0:
            per_round = DOCS_CHANGED_PER_DAY * every["docs"] // 24
            self._write("docs", "0/1", epoch, [self.docs(epoch) for _ in range(per_round)])
        self.hours += 1


def _timed_query(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> float:
    started = time.perf_counter()
    conn.execute(sql, params).fetchall()
    return round(time.perf_counter() - started, 4)


def query_times(catalog: Path, name: str) -> dict[str, float]:
    conn = sqlite3.connect(f"file:{catalog}?mode=ro", uri=True)
    try:
        times = {
            "risers": _timed_query(conn, queries.RISERS, {"limit": 100}),
            "star_curve": _timed_query(conn, queries.STAR_CURVE, {"full_name": name}),
            "longest_on_trending": _timed_query(conn, queries.LONGEST_ON_TRENDING,
                                                {"limit": 100}),
            "recently_changed_docs": _timed_query(conn, queries.RECENTLY_CHANGED_DOCS,
                                                  {"limit": 100}),
            "filter_full_name": _timed_query(
                conn, "SELECT * FROM trending_observations WHERE full_name = :n "
                "LIMIT 101", {"n": name}),
        }
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                     "AND name NOT LIKE 'sqlite_%'").fetchall():
            # A Datasette table page: its row count and its first 101 rows.
            times[f"page_{table}"] = round(
                _timed_query(conn, f"SELECT count(*) FROM [{table}]", {})
                + _timed_query(conn, f"SELECT * FROM [{table}] LIMIT 101", {}), 4)
    finally:
        conn.close()
    return times


STORE_OPEN = """
import sqlite3, sys, time
from pathlib import Path
from scraper.dedup.sqlitehashes import SqliteContentHashStore
from scraper.dedup.sqliteurls import STORE_KIND, DeltaFetchStore
started = time.perf_counter()
store = (SqliteContentHashStore(Path(sys.argv[2])) if sys.argv[1] == "contenthash"
         else DeltaFetchStore(Path(sys.argv[2]), STORE_KIND))
opened = time.perf_counter()
found = (b"k1" in store) if sys.argv[1] != "contenthash" else not store.claim("1" * 64)
looked = time.perf_counter()
store.close()
conn = sqlite3.connect(sys.argv[2])
conn.execute("PRAGMA quick_check").fetchone()
print(round(opened - started, 4), round(looked - opened, 5),
      round(time.perf_counter() - looked, 4))
"""
"""Opens a store as a worker does, one lookup, then times ``PRAGMA quick_check`` alone: the
per-open work an earlier version did (it grew with the store)."""


def fill_store(path: Path, kind: str, keys: int) -> None:
    """A store of ``keys`` entries: made by the store class, filled in key order in bulk."""
    from scraper.dedup.sqlitehashes import SqliteContentHashStore
    from scraper.dedup.sqliteurls import STORE_KIND, DeltaFetchStore

    store = (SqliteContentHashStore(path) if kind == "contenthash"
             else DeltaFetchStore(path, STORE_KIND))
    store.close()
    digest = hashlib.sha256 if kind == "contenthash" else hashlib.sha1  # the stores' own keys
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("BEGIN")
    batch = 200_000
    for start in range(0, keys, batch):
        rows = sorted((digest(str(k).encode()).digest(), "2027-01-01T00:00:00Z")
                      for k in range(start, min(keys, start + batch)))
        conn.executemany("INSERT OR IGNORE INTO entries VALUES (?, ?)", rows)
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def store_times(workdir: Path, keys: int) -> dict[str, Any]:
    """Open a store of ``keys`` entries in a fresh process (what every round does), three
    times (the page cache warm after the first); the best of three."""
    result: dict[str, Any] = {}
    for kind in ("deltafetch", "contenthash"):
        path = workdir / f"{kind}-{keys}.sqlite"
        fill_store(path, kind, keys)
        runs = [subprocess.run([sys.executable, "-c", STORE_OPEN, kind, str(path)],
                               cwd=REPO_ROOT, capture_output=True, text=True, check=True)
                .stdout.split() for _ in range(3)]
        result[kind] = {"open_s": min(float(r[0]) for r in runs),
                        "lookup_s": min(float(r[1]) for r in runs),
                        "quick_check_s": min(float(r[2]) for r in runs),
                        "bytes": path.stat().st_size}
        for extra in path.parent.glob(f"{path.name}*"):
            extra.unlink()
    return result


def _child(argv: list[str]) -> dict[str, Any]:
    """Wall time, CPU (what a loaded box cannot inflate) and exit status of one command."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return {"wall_s": round(time.perf_counter() - started, 2),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "exit": os.waitstatus_to_exitcode(status)}


def runner_times(config: Path) -> dict[str, Any]:
    def run(*args: str) -> dict[str, Any]:
        return _child([sys.executable, "-m", "runner", *args, "--config", str(config)])

    out = config.parent / "out"
    return {"status": run("status", "--json"), "watchdog": run("watchdog"),
            "report": run("report", "--out", str(out / "report")),
            "export_parquet": run("export", "--format", "parquet", "--out",
                                  str(out / "export"))}


def sizes(data: Path) -> dict[str, Any]:
    files = [p for p in (data / "items").rglob("*.jsonl*")]
    return {"item_files": len(files), "item_bytes": sum(p.stat().st_size for p in files),
            "catalog_bytes": (data / "catalog.sqlite").stat().st_size}


def run(days: list[int], search_per_hour: int, store_keys: list[int],
        workdir: Path) -> dict[str, Any]:
    home = workdir / "home"
    data = home / "data"
    home.mkdir(parents=True)
    config = home / "collector.yaml"
    config.write_text(yaml.safe_dump({"data_dir": str(data)}))
    history = History(data / "items", search_per_hour)
    catalog = [sys.executable, "-m", "runner", "catalog", "--config", str(config)]
    steps = []
    for day in days:
        t0 = time.perf_counter()
        while history.hours < day * 24:
            history.hour()
        generated = time.perf_counter() - t0
        build = measure(catalog, REPO_ROOT)
        history.hour()  # one more round of every spider due this hour
        incremental = measure(catalog, REPO_ROOT)
        per_day = {spider: round(n / (history.hours / 24)) for spider, n in history.bytes.items()}
        step = {"days": day, "generate_s": round(generated, 1), **sizes(data),
                "bytes_per_day": per_day, "first_build": build,
                "incremental_build": incremental,
                "queries_s": query_times(data / "catalog.sqlite", history.repos[7]),
                "commands": runner_times(config)}
        obs = sqlite3.connect(data / "catalog.sqlite").execute(
            "SELECT count(*) FROM trending_observations").fetchone()[0]
        step["trending_observations"] = obs
        print(json.dumps(step), flush=True)
        steps.append(step)
    stores = {}
    for keys in store_keys:
        stores[str(keys)] = store_times(workdir, keys)
        print(f"stores at {keys:,} keys: {stores[str(keys)]}", flush=True)
    return {"search_per_hour": search_per_hour, "round_intervals": ROUND_INTERVALS,
            "trending_shards": TRENDING_SHARDS, "lists": len(LISTS), "periods": PERIODS,
            "steps": steps, "stores": stores}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.history", description=__doc__)
    parser.add_argument("--days", default="1,30,365")
    parser.add_argument("--search-per-hour", type=int, default=400)
    parser.add_argument("--store-keys", default="10000,1000000,5000000")
    parser.add_argument("--workdir", help="keep the generated history here (default: a "
                        "temporary directory, removed)")
    parser.add_argument("--out", default=str(RESULTS_DIR / "history.json"))
    args = parser.parse_args(argv)
    days = [int(d) for d in args.days.split(",")]
    keys = [int(k) for k in args.store_keys.split(",") if k]
    if args.workdir:
        workdir = Path(args.workdir)
        shutil.rmtree(workdir, ignore_errors=True)
        result = run(days, args.search_per_hour, keys, workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
            result = run(days, args.search_per_hour, keys, Path(tmp))
    result = {"machine": machine_info(), "command": " ".join(sys.argv), **result}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
