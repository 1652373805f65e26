"""The slices each search query was cut into, kept so the next round pages instead of probing.

One small SQLite store for the machine (``state/search_slices.sqlite``), shared by every
search worker: a plan belongs to the query, not to the shard that made it, so it survives a
change of ``--workers``. A plan is written only once it is a whole partition of its query, in
one transaction, so a kill leaves the previous plan or the new one, never half of one.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from scraper.searchslices import Slice
from scraper.stores.sqlite import open_store

WHOLE: list[Slice] = []
"""The plan of a query that fits under the cap: no slices, the query itself."""


class SlicePlanStore:
    KIND = "search-slices"
    VERSION = 1
    SCHEMA = ("CREATE TABLE IF NOT EXISTS plans (query TEXT PRIMARY KEY, slices TEXT NOT NULL, "
              "updated_at REAL NOT NULL);")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn = open_store(path, self.KIND, self.VERSION, self.SCHEMA)

    def load(self, query: str) -> list[Slice] | None:
        """The query's last plan (``WHOLE`` for an unsliced one), None if it has none or the
        row is not one this version wrote."""
        row = self._conn.execute("SELECT slices FROM plans WHERE query = ?",
                                 (query,)).fetchone()
        if row is None:
            return None
        try:
            return [Slice.from_json(entry) for entry in json.loads(row[0])]
        except (ValueError, TypeError):
            return None  # planned afresh, and overwritten once the new plan is whole

    def save(self, query: str, slices: list[Slice]) -> None:
        self._conn.execute("INSERT OR REPLACE INTO plans VALUES (?, ?, ?)",
                           (query, json.dumps([s.to_json() for s in slices]), time.time()))

    def close(self) -> None:
        self._conn.close()
