"""The ETag (and ``Link`` header) last seen for each GitHub API page, per identity.

One SQLite store per machine (``{data_dir}/state/etags.sqlite``); the distributed mode keeps
the same entries in Redis (:mod:`scraper.budget.redisetags`). Entries unseen for
:data:`~scraper.budget.etags.ETAG_KEEP_S` are dropped when the store is opened.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from scrapy.crawler import Crawler

from scraper.budget.etags import ETAG_KEEP_S, PageTag
from scraper.stores.base import AlwaysUp
from scraper.stores.sqlite import open_store, transaction
from scraper.utils.layout import DataLayout

KIND = "etags"
VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS etags (
    identity TEXT NOT NULL,
    url TEXT NOT NULL,
    etag TEXT NOT NULL,
    seen_at REAL NOT NULL,
    link TEXT,                        -- the page's Link header: a 304 goes on to the next page
    PRIMARY KEY (identity, url)
);
"""

class EtagStore(AlwaysUp):
    """``ETAG_STORAGE`` on one machine."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._conn = open_store(path, KIND, VERSION, SCHEMA)
        self._conn.execute("DELETE FROM etags WHERE seen_at < ?", (clock() - ETAG_KEEP_S,))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> EtagStore:
        return cls(DataLayout.from_settings(crawler.settings).etags_db)

    def get(self, identity: str, url: str) -> PageTag | None:
        row = self._conn.execute("SELECT etag, link FROM etags WHERE identity = ? AND url = ?",
                                 (identity, url)).fetchone()
        return (row[0], row[1]) if row else None

    def remember(self, identity: str, pages: dict[str, PageTag]) -> None:
        """``url → (etag, link)`` of pages whose items are all written, in one transaction."""
        now = self.clock()
        with transaction(self._conn):
            self._conn.executemany("INSERT OR REPLACE INTO etags VALUES (?, ?, ?, ?, ?)",
                                   [(identity, url, etag, now, link)
                                    for url, (etag, link) in pages.items()])

    def close(self) -> None:
        self._conn.close()
