"""``python -m benchmarks.history``: the data dir the defaults fill, all of it, and what
``status`` forecasts from it.

Generates ``--days`` days (default 10) of what ``python -m runner --workers 20`` writes at the
defaults, through the real stores, on a fake clock that ends now (:mod:`benchmarks.historywriter`:
items in hourly segments, the page archive, the dedup stores, the GitHub budget, ETags and slice
plans, each round's log as a real round wrote it), with the runner's catalog build every
``--catalog-every`` hours (the real ``python -m runner catalog``: the catalog, the feeds,
``logs/catalog.log``) and a growth sample every hour (``runner.core.growth.record_sample``, as
the runner takes them). Then it measures:

* each part of the data dir on disk (``data_size``: allocated blocks, what ``status`` counts) at
  the end of every day, and each part's growth per day over the last 7 days;
* the growth per day ``python -m runner status --json`` forecasts on the same data dir, and its
  ratio to the measured growth (the sizing's check: within 20%);
* at each step of ``--days`` (``--days 1,10``): the last catalog build, every canned Datasette
  query and the catalog's table pages, ``status``, ``watchdog``, ``report`` and ``export
  --format parquet``;
* with ``--store-keys``, opening a deltafetch and a content-hash store of that many keys.

What it assumes, since only GitHub and the sites can say: the search repositories that change an
hour (``--search-per-hour``), each docs site at its page cap, a tenth of the docs pages fetched
again changed, every trending fetch a changed page (constants of :mod:`benchmarks.historywriter`
and :mod:`benchmarks.trendingpages`).

    python -m benchmarks.history                          # 10 days, about 8 min of CPU
    python -m benchmarks.history --days 2 --out /tmp/h.json   # a quick look
    python -m benchmarks.history --days 1,30 --store-keys 10000,1000000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.catalog import measure
from benchmarks.common import REPO_ROOT, RESULTS_DIR, machine_info
from benchmarks.historywriter import HOUR, SEARCH_RESULTS, WORKERS, HistoryWriter, part_sizes
from benchmarks.roundlogs import real_round_logs
from benchmarks.segmenthistory import History  # noqa: F401 - tests/e2e/test_catalog.py's input
from runner.catalog import queries
from runner.core.growth import WINDOW, outlook, record_sample
from scraper.utils.diskspace import data_size

DAY = 86400
DISK = 40 * 10**9
"""The disk the sizing speaks of: 40 GB (decimal, as disks are sold)."""


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


def catalog_build(config: Path, layout_logs: Path, now: float) -> dict[str, Any]:
    """The runner's catalog child: ``python -m runner catalog``, its output in
    ``logs/catalog.log`` and the runner's line for it in ``logs/runner.log``."""
    result = measure([sys.executable, "-m", "runner", "catalog", "--config", str(config)],
                     REPO_ROOT)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(now))
    with open(layout_logs / "catalog.log", "a", encoding="utf-8") as log:
        log.write(result["stdout"] + "\n")
    with open(layout_logs / "runner.log", "a", encoding="utf-8") as log:
        log.write(f"{stamp},000 [runner] INFO: catalog updated in {result['wall_s']:.1f} s\n")
    return result


def status_forecast(config: Path) -> dict[str, Any]:
    """What ``python -m runner status --json`` says of the data dir's size and growth (its
    exit status says the runner is not running: no runner runs on a generated data dir)."""
    done = subprocess.run([sys.executable, "-m", "runner", "status", "--json", "--config",
                           str(config)], cwd=REPO_ROOT, capture_output=True, text=True)
    try:
        totals = json.loads(done.stdout)["totals"]
    except (ValueError, KeyError):
        raise SystemExit(f"status --json: exit {done.returncode}: {done.stderr[-2000:]}") \
            from None
    return {key: totals[key] for key in ("data_bytes", "growth_per_day_bytes",
                                         "disk_days_left")}


def growth(daily: list[dict[str, Any]], span: int) -> dict[str, float]:
    """Bytes per day of each part over the last ``span`` days."""
    last, first = daily[-1]["parts"], daily[-1 - span]["parts"]
    return {part: (last[part] - first[part]) / span for part in last}


def sizing(daily: list[dict[str, Any]], forecast: int | None) -> dict[str, Any]:
    """The disk's life at the defaults from the measured growth, and ``status``'s forecast
    beside it."""
    days = len(daily) - 1
    span = min(int(WINDOW // DAY), days - 1)
    if span < 1:
        return {"note": "no growth per day from less than 2 days"}
    parts = growth(daily, span)
    per_day = sum(parts.values())
    size = daily[-1]["data_bytes"]
    steady = (size - daily[1]["data_bytes"]) / (days - 1)
    life_days = days + (DISK - size) / per_day
    return {
        "window_days": span,
        "bytes_per_day_by_part": {k: round(v) for k, v in parts.items()},
        "bytes_per_day": round(per_day),
        "bytes_per_day_after_day_1": round(steady),
        "first_day_bytes": daily[1]["data_bytes"],
        "status_growth_per_day_bytes": forecast,
        "status_over_measured": None if forecast is None else round(forecast / per_day, 3),
        "year_bytes": round(size + (365 - days) * per_day),
        "disk_bytes": DISK,
        "disk_years": round(life_days / 365, 2),
    }


def step_measurements(config: Path, data: Path, build: dict[str, Any] | None) -> dict[str, Any]:
    catalog = data / "catalog.sqlite"
    conn = sqlite3.connect(catalog)
    busiest = conn.execute("SELECT full_name FROM trending_history ORDER BY observations DESC "
                           "LIMIT 1").fetchone()[0]
    observations = conn.execute("SELECT count(*) FROM trending_observations").fetchone()[0]
    conn.close()
    return {"last_catalog_build": build, "trending_observations": observations,
            "queries_s": query_times(catalog, busiest), "commands": runner_times(config)}


def run(days: list[int], search_per_hour: int, store_keys: list[int], catalog_every: int,
        workdir: Path, docs_pages: int | None = None) -> dict[str, Any]:
    home = workdir / "home"
    data = home / "data"
    home.mkdir(parents=True)
    config = home / "collector.yaml"
    config.write_text(yaml.safe_dump({"data_dir": str(data)}))
    logs = real_round_logs()
    print("a real round's log: " + ", ".join(f"{spider} {len(text):,} bytes"
                                             for spider, text in logs.items()), flush=True)
    end = math.floor(time.time() / HOUR) * HOUR  # the history's last hour ends now
    writer = HistoryWriter(data, end - days[-1] * DAY, search_per_hour, logs, docs_pages)
    layout = writer.layout
    daily = [{"day": 0, "data_bytes": 0, "parts": dict.fromkeys(part_sizes(layout), 0)}]
    steps, build = [], None
    started = time.process_time()
    for day in days:
        while writer.hours < day * 24:
            writer.hour()
            due = catalog_every and writer.hours % catalog_every == 0
            if due or (not catalog_every and writer.hours == day * 24):
                build = catalog_build(config, layout.logs_dir, writer.now)
            record_sample(layout, now=writer.now)
            if writer.hours % 24 == 0:
                daily.append({"day": writer.hours // 24, "data_bytes": data_size(data),
                              "parts": part_sizes(layout)})
                print(f"day {writer.hours // 24}: {daily[-1]['data_bytes'] / 1e6:,.0f} MB, "
                      f"{time.process_time() - started:.0f} s of CPU so far", flush=True)
        forecast = outlook(layout, now=writer.now).per_day
        step = {"days": day, "data_bytes": daily[-1]["data_bytes"], "parts": daily[-1]["parts"],
                "growth_forecast_per_day": None if forecast is None else round(forecast),
                **step_measurements(config, data, build)}
        print(json.dumps({k: v for k, v in step.items() if k != "queries_s"}), flush=True)
        steps.append(step)
    status = status_forecast(config)
    result = {"workers": WORKERS, "plan": writer.plan, "search_per_hour": search_per_hour,
              "docs_pages_per_site": writer.docs_pages,
              "search_results": SEARCH_RESULTS, "catalog_every_h": catalog_every,
              "round_log_bytes": {spider: len(text) for spider, text in logs.items()},
              "item_bytes_written": writer.written, "daily": daily, "steps": steps,
              "status": status,
              "sizing": sizing(daily, status["growth_per_day_bytes"])}
    stores = {}
    for keys in store_keys:
        stores[str(keys)] = store_times(workdir, keys)
        print(f"stores at {keys:,} keys: {stores[str(keys)]}", flush=True)
    result["stores"] = stores
    return result


def report(result: dict[str, Any]) -> str:
    sizing_ = result["sizing"]
    if "note" in sizing_:
        return sizing_["note"]
    lines = [f"growth per day over the last {sizing_['window_days']} days, by part:"]
    for part, value in sizing_["bytes_per_day_by_part"].items():
        lines.append(f"  {part:<28} {value / 1e6:8.2f} MB/day")
    measured, forecast = sizing_["bytes_per_day"], sizing_["status_growth_per_day_bytes"]
    lines += [f"  {'measured, all parts':<28} {measured / 1e6:8.2f} MB/day "
              f"({sizing_['bytes_per_day_after_day_1'] / 1e6:.2f} MB/day after day 1)",
              f"  {'status --json forecasts':<28} "
              + ("nothing" if forecast is None else f"{forecast / 1e6:8.2f} MB/day, "
                 f"{sizing_['status_over_measured']:.3f}× measured"),
              f"first day {sizing_['first_day_bytes'] / 1e6:,.0f} MB; a year "
              f"{sizing_['year_bytes'] / 1e9:.1f} GB; a 40 GB disk lasts "
              f"{sizing_['disk_years']:.2f} years"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.history", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", default="10", help="days of history, or steps: 1,10")
    parser.add_argument("--search-per-hour", type=int, default=400)
    parser.add_argument("--catalog-every", type=int, default=6, metavar="HOURS",
                        help="hours between catalog builds (the runner's is 1; 0: only at "
                        "each step, a first build)")
    parser.add_argument("--docs-pages", type=int, metavar="N",
                        help="pages of each docs site (default: its max_pages_per_site, 2,000)")
    parser.add_argument("--store-keys", default="", help="e.g. 10000,1000000,5000000")
    parser.add_argument("--workdir", help="keep the generated history here (default: a "
                        "temporary directory, removed)")
    parser.add_argument("--out", help="the results file (default: "
                        "benchmarks/results/history-{last of --days}d.json)")
    args = parser.parse_args(argv)
    try:
        days = sorted({int(d) for d in args.days.split(",")})
        keys = [int(k) for k in args.store_keys.split(",") if k]
    except ValueError:
        parser.error(f"--days {args.days!r} / --store-keys {args.store_keys!r}: "
                     "comma-separated whole numbers")
    if days[0] < 1 or args.catalog_every < 0 or (args.docs_pages or 1) < 1:
        parser.error("--days and --docs-pages must be at least 1, --catalog-every at least 0")
    if args.workdir:
        workdir = Path(args.workdir)
        shutil.rmtree(workdir, ignore_errors=True)
        result = run(days, args.search_per_hour, keys, args.catalog_every, workdir,
                     args.docs_pages)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
            result = run(days, args.search_per_hour, keys, args.catalog_every, Path(tmp),
                         args.docs_pages)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["cpu_s"] = round(time.process_time() + usage.ru_utime + usage.ru_stime, 1)
    result = {"machine": machine_info(), "command": " ".join(sys.argv), **result}
    print(report(result))
    print(f"CPU: {result['cpu_s']} s, this process and its children")
    out = Path(args.out) if args.out else RESULTS_DIR / f"history-{days[-1]}d.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
