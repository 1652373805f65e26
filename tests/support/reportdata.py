"""Catalogs for the report's tests: the first hour of data, and a year of it."""

from __future__ import annotations

import time
from pathlib import Path

from runner.catalog.schema import connect

HOUR = 3600
START = 1_798_761_600  # 2027-01-01T00:00:00Z


def stamp(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(epoch))


def hour_of(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:00Z", time.gmtime(epoch))


def write_catalog(path: Path, hours: int, step: int = 1) -> None:
    """``hours`` hours of data, every ``step`` hours one hour of items, a catalog build
    (budget, size sample) and a trending fetch; ``a/rising`` gains a star a fetch, ``b/flat``
    none."""
    conn = connect(path)
    conn.execute("BEGIN")
    conn.execute("INSERT INTO trending_lists VALUES (1, 'daily', '', '')")
    for h in range(0, hours, step):
        at = START + h * HOUR
        conn.executemany("INSERT INTO items_per_hour VALUES (?, ?, ?, ?)",
                         [(spider, hour_of(at), 25 + h % 7, 9000) for spider in
                          ("trending", "search")])
        conn.execute("INSERT INTO budget_samples VALUES (?, 'search', 'anonymous', 10, ?)",
                     (stamp(at + 1789), 10 - h % 10))
        conn.execute("INSERT INTO size_samples VALUES (?, ?)", (stamp(at + 1789), 10**6 * h))
        conn.execute("INSERT INTO trending_pages VALUES (?, ?)", (h + 1, f"hash{h}"))
        conn.executemany("INSERT INTO trending_page_rows VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         [(h + 1, 1, "a/rising", 100 + h, 1, 1, "Go", None),
                          (h + 1, 2, "b/flat", 50, 1, 0, "Go", None)])
        conn.execute("INSERT INTO trending_fetches VALUES (?, 1, ?, NULL)", (stamp(at), h + 1))
    conn.execute("COMMIT")
    conn.close()
