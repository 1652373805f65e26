"""``CONTENTHASH_STORAGE`` on one machine: ``{data_dir}/state/contenthash/{spider}.sqlite``,
shared by all the spider's shards, the per-shard stores of earlier versions merged in."""

from __future__ import annotations

from pathlib import Path

from scrapy.crawler import Crawler

from scraper.layout import DataLayout
from scraper.stores.base import AlwaysUp
from scraper.stores.sqlite.mapping import SqliteMapping

STORE_KIND = "contenthash"


class SqliteContentHashStore(SqliteMapping):
    """hash → the ``collected_at`` of its item.

    A claim is local to the process (the pipeline's ``in_flight`` set): two shards that meet
    the same content at the same instant may both write it — a race of one item per page, the
    bound README's "Dedup" gives.
    """

    def __init__(self, path: Path, *, ignore_before: str = "") -> None:
        super().__init__(path, kind=STORE_KIND)
        self.ignore_before = ignore_before

    def claim(self, digest: str) -> bool:
        written = self.get(bytes.fromhex(digest))
        return written is None or written < self.ignore_before

    def confirm(self, digest: str, collected_at: str) -> None:
        self[bytes.fromhex(digest)] = collected_at

    def release(self, digest: str) -> None:
        """Nothing was stored for a claim."""


class SqliteContentHashStorage(AlwaysUp):
    def __init__(self, layout: DataLayout) -> None:
        self.layout = layout
        self.db: SqliteContentHashStore | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SqliteContentHashStorage:
        return cls(DataLayout.from_settings(crawler.settings))

    def open_spider(self, spider: str, ignore_before: str) -> None:
        self.db = SqliteContentHashStore(self.layout.contenthash_db(spider),
                                         ignore_before=ignore_before)
        self.db.absorb(self.layout.shard_contenthash_dbs(spider))

    def claim(self, digest: str) -> bool:
        assert self.db is not None
        return self.db.claim(digest)

    def confirm(self, digest: str, collected_at: str) -> None:
        assert self.db is not None
        self.db.confirm(digest, collected_at)

    def release(self, digest: str) -> None:
        """Nothing was stored for a claim."""

    def close_spider(self) -> None:
        if self.db is not None:
            self.db.close()
