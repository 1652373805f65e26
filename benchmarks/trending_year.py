"""``python -m benchmarks.trending_year``: the canned trending queries on a generated year.

A year of the default trending plan (every list of the default config, fetched every
``config.round_interval_of("trending")`` seconds, the interval the runner uses: 12 lists once an
hour, 105,120 fetches; ``--cadence 60``, 6.3 million) is written straight into a
catalog of the current schema (:mod:`runner.catalog.trendingsnapshots`: each distinct page once, a
reference per fetch), with its history; each list's page changes every ``--change-every`` minutes
(GitHub recomputes the lists a few times a day; 60 is pessimistic), a few rows entering and leaving
and every star count rising. Then each canned query (the viewer's, the report's, ``python -m runner
history``'s) is timed, best of 3 after a cold first run, on the year and — the baseline, in the same
run — on the year's last week alone: a year should cost about what a week does. The target: every
query under 1 s on 2 cores.

    python -m benchmarks.trending_year                    # a year (~ a few minutes)
    python -m benchmarks.trending_year --days 7           # a quick look
    python -m benchmarks.trending_year --cadence 60       # 60 times the fetches: the stress case
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS_DIR, machine_info
from runner.catalog import queries
from runner.catalog.schema import connect
from runner.catalog.trendingsnapshots import page_hash
from scraper.config.collector import CollectorConfig

ROWS = 25
POOL = 400  # repositories a list draws from over the year
START = 1_767_225_600  # 2026-01-01T00:00:00Z


def _stamp(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + \
        f".{int(epoch % 1 * 1000):03d}Z"


def _fold(history: dict[tuple[int, str], list[Any]], list_id: int,
          rows: list[tuple[Any, ...]], times: list[str]) -> None:
    """A page's fetches into its repositories' history, in one step per row."""
    for rank, name, star, *_ in rows:
        entry = history.get((list_id, name))
        if entry is None:
            history[(list_id, name)] = [times[0], times[-1], len(times), rank, star, star]
        else:
            entry[1], entry[2], entry[5] = times[-1], entry[2] + len(times), star
            entry[3] = min(entry[3], rank)


def generate(db: Path, days: float, cadence: float, change_every: float,
             seed: int = 26) -> dict[str, int]:
    """Write ``days`` of fetches of the default lists into a new catalog at ``db``."""
    rng = random.Random(seed)
    lists = [(period, language, spoken) for language, period, spoken
             in CollectorConfig().trending.start_entries()]
    conn = connect(db)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("BEGIN")
    history: dict[tuple[int, str], list[Any]] = {}
    pages = fetches = 0
    for list_id, (period, language, spoken) in enumerate(lists, 1):
        conn.execute("INSERT INTO trending_lists VALUES (?, ?, ?, ?)",
                     (list_id, period, language, spoken))
        names = [f"owner{list_id}-{i % 97}/repo-{list_id}-{i}" for i in range(POOL)]
        stars = {name: rng.randint(100, 50_000) for name in names}
        shown = rng.sample(names, ROWS)
        t = START + list_id * 0.37  # lists are fetched one after the other
        end = START + days * 86400
        next_change = t
        batch: list[tuple[Any, ...]] = []
        page_id = None
        current: list[tuple[Any, ...]] = []
        run: list[str] = []  # the fetch times of the current page

        while t < end:
            if t >= next_change:
                if run:
                    _fold(history, list_id, current, run)
                    run = []
                for _ in range(rng.randint(1, 4)):  # a few leave, a few come
                    shown[rng.randrange(ROWS)] = rng.choice(names)
                shown = list(dict.fromkeys(shown))
                while len(shown) < ROWS:
                    shown.append(rng.choice([n for n in names if n not in shown]))
                rng.shuffle(shown)
                for name in shown:
                    stars[name] += rng.randint(1, 300)
                current = [(rank, name, stars[name], stars[name] // 10, rng.randint(10, 900),
                            "Python", f"{name} does something useful")
                           for rank, name in enumerate(shown, 1)]
                page_id = conn.execute("INSERT INTO trending_pages (rows_hash) VALUES (?)",
                                       (page_hash(current),)).lastrowid
                conn.executemany("INSERT INTO trending_page_rows VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                 [(page_id, *row) for row in current])
                pages += 1
                next_change += change_every
            at = _stamp(t)
            run.append(at)
            batch.append((at, list_id, page_id, None))
            if len(batch) >= 50_000:
                conn.executemany("INSERT INTO trending_fetches VALUES (?, ?, ?, ?)", batch)
                fetches += len(batch)
                batch.clear()
            t += cadence
        if run:
            _fold(history, list_id, current, run)
        conn.executemany("INSERT INTO trending_fetches VALUES (?, ?, ?, ?)", batch)
        fetches += len(batch)
    conn.executemany(
        "INSERT INTO trending_history VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(name, *lists[list_id - 1], *entry) for (list_id, name), entry in history.items()])
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.close()
    return {"lists": len(lists), "fetches": fetches, "pages": pages,
            "history_rows": len(history)}


def canned(conn: sqlite3.Connection) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every canned trending query, with the parameters it is asked with; the repository is
    the one with the most observations (the longest history to read)."""
    busiest = conn.execute("SELECT full_name FROM trending_history "
                           "ORDER BY observations DESC LIMIT 1").fetchone()[0]
    return {
        "rising_this_week": (queries.RISERS, {"limit": 100}),
        "longest_on_trending": (queries.LONGEST_ON_TRENDING, {"limit": 100}),
        "when_was_it_trending": (queries.WHEN_TRENDING, {"full_name": busiest}),
        "star_curve (report)": (queries.STAR_CURVE, {"full_name": busiest}),
        "feed (one list)": (queries.NEW_ON_LIST, {"period": "daily", "language": "",
                                                  "spoken": "", "limit": 50}),
    }


def time_queries(db: Path) -> dict[str, dict[str, float]]:
    conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
    out = {}
    try:
        for name, (sql, params) in canned(conn).items():
            times = []
            for _ in range(4):
                started = time.perf_counter()
                conn.execute(sql, params).fetchall()
                times.append(time.perf_counter() - started)
            out[name] = {"first_s": round(times[0], 4), "best_s": round(min(times[1:]), 4)}
    finally:
        conn.close()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.trending_year")
    parser.add_argument("--days", type=float, default=365)
    parser.add_argument("--change-every", type=float, default=60, metavar="MINUTES")
    parser.add_argument("--cadence", type=float, metavar="SECONDS",
                        help="seconds between fetches of a list (default: the trending "
                        "round_interval the runner uses, 3600; 60 is the stress case)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "trending_year.json")
    args = parser.parse_args(argv)
    if (args.cadence is not None and args.cadence <= 0) or args.days <= 0:
        parser.error("--cadence and --days must be above 0")
    cadence = args.cadence or CollectorConfig().round_interval_of("trending")
    results: dict[str, Any] = {"machine": machine_info(), "days": args.days,
                               "cadence_s": cadence, "change_every_min": args.change_every}
    with tempfile.TemporaryDirectory(prefix="trending-year-") as tmp:
        for label, days in (("week", 7.0), ("year", args.days)):
            db = Path(tmp) / f"{label}.sqlite"
            started = time.perf_counter()
            shape = generate(db, days, cadence, args.change_every * 60)
            shape["generate_s"] = round(time.perf_counter() - started, 1)
            shape["catalog_mb"] = round(db.stat().st_size / 1e6, 1)
            results[label] = {"shape": shape, "queries": time_queries(db)}
    week, year = results["week"]["queries"], results["year"]["queries"]
    print(f"{'query':<24} {'week best':>10} {'year first':>11} {'year best':>10} {'× week':>7}")
    for name in year:
        ratio = year[name]["best_s"] / max(week[name]["best_s"], 1e-6)
        print(f"{name:<24} {week[name]['best_s'] * 1000:>8.1f}ms "
              f"{year[name]['first_s'] * 1000:>9.1f}ms {year[name]['best_s'] * 1000:>8.1f}ms "
              f"{ratio:>6.1f}×")
    for label in ("week", "year"):
        print(f"{label}: {json.dumps(results[label]['shape'])}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    return results


if __name__ == "__main__":
    main()
