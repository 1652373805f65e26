"""A persistent ``bytes → str`` mapping in one crash-safe SQLite store (see
:mod:`scraper.stores.sqlite`), the base of the one-machine dedup stores."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any, Generic, TypeVar

from scrapy.crawler import Crawler

from scraper.stores.base import AlwaysUp
from scraper.stores.merge import merge_stores
from scraper.stores.sqlite import open_store, transaction
from scraper.utils.layout import DataLayout


class SqliteMapping:
    """A persistent ``bytes → str`` mapping: what scrapy-deltafetch expects of its ``dbm``."""

    KIND = "mapping"
    VERSION = 1
    SCHEMA = "CREATE TABLE IF NOT EXISTS entries (key BLOB PRIMARY KEY, value TEXT NOT NULL);"
    TABLES: tuple[str, ...] = ("entries",)
    """What :meth:`absorb` copies from an older store of the same kind."""

    def __init__(self, path: Path, kind: str = KIND) -> None:
        self.path = path
        self.kind = kind
        self._conn = open_store(path, kind, self.VERSION, self.SCHEMA)

    def absorb(self, sources: list[Path]) -> int:
        """Merge older stores of this kind into this one and move them aside (see
        :mod:`scraper.stores.merge`); returns how many were merged."""
        return merge_stores(self._conn, sources, self.kind, self.TABLES)

    def __contains__(self, key: bytes) -> bool:
        row = self._conn.execute("SELECT 1 FROM entries WHERE key = ?", (key,)).fetchone()
        return row is not None

    def get(self, key: bytes, default: str | None = None) -> str | None:
        row = self._conn.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
        return default if row is None else row[0]

    def __getitem__(self, key: bytes) -> str:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: bytes, value: str | bytes) -> None:
        if isinstance(value, bytes):
            value = value.decode()
        self._conn.execute("INSERT OR REPLACE INTO entries VALUES (?, ?)", (key, value))

    def transaction(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """Several writes as one: all of them or none survive a kill."""
        return transaction(self._conn)

    def __len__(self) -> int:
        return self._conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]

    def close(self) -> None:
        self._conn.close()


MappingT = TypeVar("MappingT", bound=SqliteMapping)


class SpiderStorage(AlwaysUp, Generic[MappingT]):
    """A ``*_STORAGE`` class over one spider's mapping, opened at ``open_spider``."""

    def __init__(self, layout: DataLayout) -> None:
        self.layout = layout
        self._db: MappingT | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        return cls(DataLayout.from_settings(crawler.settings))

    @property
    def db(self) -> MappingT:
        assert self._db is not None, "used before open_spider"
        return self._db

    def close_spider(self) -> None:
        if self._db is not None:
            self._db.close()
