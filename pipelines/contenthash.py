"""Content-level dedup on one machine: :mod:`scraper.contenthash`'s rule over the spider's
SQLite store, ``{data_dir}/state/contenthash/{spider}.sqlite`` (shared by all its shards)."""

from __future__ import annotations

from scrapy import Spider

from scraper.contenthash import ContentHashDedup, SqliteContentHashStore, open_sqlite_store
from scraper.layout import DataLayout


class ContentHashPipeline(ContentHashDedup):
    store: SqliteContentHashStore

    def open_store(self, spider: Spider, ignore_before: str) -> SqliteContentHashStore:
        return open_sqlite_store(DataLayout.from_settings(self.crawler.settings), spider.name,
                                 ignore_before)
