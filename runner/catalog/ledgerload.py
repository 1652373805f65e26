"""The gap ledger into the catalog's ``fetch_ledger`` table, at each build.

Only settled rounds are loaded (a round still running may yet report); each build reads the
ledger from the day before the newest round it holds, so a build costs a day or two of the
ledger, and re-running it adds nothing (rows are replaced by their key).
"""

from __future__ import annotations

import calendar
import time
from typing import Any

from scraper.utils.layout import DataLayout
from scraper.utils.ledger import scheduled_fetches, stamp_ms

COLUMNS = ("spider", "shard", "round", "kind", "key", "outcome", "cause", "detail", "at")


def load_ledger(conn: Any, layout: DataLayout) -> int:
    """Rows written or replaced."""
    newest = conn.execute("SELECT max(round) FROM fetch_ledger").fetchone()[0]
    since = None
    if newest:  # a round of the day before may have settled since the last build
        since = stamp_ms(calendar.timegm(time.strptime(newest[:10], "%Y-%m-%d")) - 86400)
    rows = [tuple(getattr(fetch, name) for name in COLUMNS)
            for fetch in scheduled_fetches(layout.state_dir, since, settled_only=True)]
    conn.execute("BEGIN")
    conn.executemany(f"INSERT OR REPLACE INTO fetch_ledger ({', '.join(COLUMNS)}) "
                     f"VALUES ({', '.join('?' * len(COLUMNS))})", rows)
    conn.execute("COMMIT")
    return len(rows)
