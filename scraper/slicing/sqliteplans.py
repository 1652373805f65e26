"""The slices each search query was cut into, kept so the next round pages instead of probing.

One small SQLite store for the machine (``state/search_slices.sqlite``), shared by every
search worker: a plan belongs to the query, not to the shard that made it, so it survives a
change of ``--workers``. A plan is written only once it is a whole partition of its query, in
one transaction, so a kill leaves the previous plan or the new one, never half of one.
"""

from __future__ import annotations

import time
from pathlib import Path

from scrapy.crawler import Crawler

from scraper.slicing.plans import decode_plan, encode_plan
from scraper.slicing.slices import Slice
from scraper.stores.base import AlwaysUp
from scraper.stores.sqlite import open_store, transaction
from scraper.utils.layout import DataLayout


class SlicePlanStore(AlwaysUp):
    """``SLICEPLAN_STORAGE`` on one machine."""

    KIND = "search-slices"
    VERSION = 1
    SCHEMA = ("CREATE TABLE IF NOT EXISTS plans (query TEXT PRIMARY KEY, slices TEXT NOT NULL, "
              "updated_at REAL NOT NULL);")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn = open_store(path, self.KIND, self.VERSION, self.SCHEMA)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SlicePlanStore:
        return cls(DataLayout.from_settings(crawler.settings).search_slices_db)

    def load(self, query: str) -> list[Slice] | None:
        """The query's last plan (``[]`` for an unsliced one), None if it has none or the
        row is not one this version wrote."""
        row = self._conn.execute("SELECT slices FROM plans WHERE query = ?",
                                 (query,)).fetchone()
        return None if row is None else decode_plan(row[0])

    def save(self, query: str, slices: list[Slice]) -> None:
        self._conn.execute("INSERT OR REPLACE INTO plans VALUES (?, ?, ?)",
                           (query, encode_plan(slices), time.time()))

    def replace(self, query: str, expected: list[Slice] | None, slices: list[Slice]) -> bool:
        with transaction(self._conn):  # BEGIN IMMEDIATE: no other writer between read and write
            if self.load(query) != expected:
                return False
            self.save(query, slices)
        return True

    def close(self) -> None:
        self._conn.close()
