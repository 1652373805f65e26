"""``DELTAFETCH_STORAGE`` on one machine: the spider's one SQLite store, shared by all its
shards (``DataLayout.deltafetch_db``), with the per-shard stores of earlier versions merged into
it at start (:mod:`scraper.stores.merge`)."""

from __future__ import annotations

import json

from scraper.dedup.sqlitemapping import SpiderStorage, SqliteMapping

STORE_KIND = "deltafetch"


class DeltaFetchStore(SqliteMapping):
    """Upstream's mapping (request key → time stored), plus each page's outgoing links."""

    SCHEMA = SqliteMapping.SCHEMA + (
        "CREATE TABLE IF NOT EXISTS links (key BLOB PRIMARY KEY, urls TEXT NOT NULL);"
    )
    TABLES = ("entries", "links")

    def links(self, key: bytes) -> list[str]:
        row = self._conn.execute("SELECT urls FROM links WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else []

    def set_links(self, key: bytes, urls: list[str]) -> None:
        self._conn.execute("INSERT OR REPLACE INTO links VALUES (?, ?)", (key, json.dumps(urls)))

    def record(self, key: bytes, value: str, links: list[str] | None = None) -> None:
        """Links and record in one transaction: one write-lock turn on the shared store."""
        if links is None:
            self[key] = value
            return
        with self.transaction():
            self.set_links(key, links)
            self[key] = value


class SqliteDeltaFetchStorage(SpiderStorage[DeltaFetchStore]):
    def open_spider(self, spider: str, refresh_after: float | None) -> None:
        self._db = DeltaFetchStore(self.layout.deltafetch_db(spider), kind=STORE_KIND)
        self._db.absorb(self.layout.shard_deltafetch_dbs(spider))

    def get(self, key: bytes) -> str | None:
        return self.db.get(key)

    def links(self, key: bytes) -> list[str]:
        return self.db.links(key)

    def record(self, key: bytes, value: str, links: list[str] | None = None) -> None:
        self.db.record(key, value, links)
