"""Content-level dedup: an item whose content this spider-shard already stored is dropped.

The hash is recorded only once the item has passed every pipeline (``item_scraped``), i.e. once
the item store has written it: a kill between the two may duplicate a line, never lose one.
"""

from __future__ import annotations

from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler

from scraper.diskspace import round_closed_when_full, skipped_when_full
from scraper.exceptions import DuplicateItem
from scraper.items import content_hash, is_deduplicated
from scraper.layout import DataLayout
from scraper.stores.sqlite import SqliteMapping

STORE_KIND = "contenthash"


class ContentHashPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.layout = DataLayout.from_settings(crawler.settings)
        self.store: SqliteMapping | None = None
        # Hashes between process_item and item_scraped: a second copy in that gap is a duplicate.
        self.in_flight: set[str] = set()
        crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self.item_failed, signal=signals.item_error)
        crawler.signals.connect(self.item_failed, signal=signals.item_dropped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentHashPipeline:
        return cls(crawler)

    def open_spider(self) -> None:
        spider = self.crawler.spider
        with round_closed_when_full():
            self.store = SqliteMapping(self.layout.contenthash_db(spider.name, spider.shard),
                                       kind=STORE_KIND)

    def close_spider(self) -> None:
        if self.store is not None:
            self.store.close()

    def process_item(self, item: scrapy.Item) -> scrapy.Item:
        digest = content_hash(item)
        item["content_hash"] = digest
        if not is_deduplicated(item):
            return item  # an observation (a page snapshot): recorded every time it is seen
        key = bytes.fromhex(digest)
        if digest in self.in_flight or key in self.store:
            self.stats.inc_value("contenthash/dropped")
            raise DuplicateItem(f"content already collected ({digest[:12]})", log_level="DEBUG")
        self.in_flight.add(digest)
        return item

    def item_scraped(self, item: Any, **kwargs: Any) -> None:
        digest = item.get("content_hash")
        if digest in self.in_flight:
            self.in_flight.discard(digest)
            with skipped_when_full():
                self.store[bytes.fromhex(digest)] = item.get("collected_at") or ""
                self.stats.inc_value("contenthash/stored")

    def item_failed(self, item: Any, exception: BaseException | None = None,
                    **kwargs: Any) -> None:
        """Not written after all (a later pipeline failed or dropped it): not collected.

        A duplicate dropped here carries the hash of the copy still in flight: leave that one.
        """
        if isinstance(exception, DuplicateItem):
            return
        if item.get("content_hash") in self.in_flight:
            self.in_flight.discard(item["content_hash"])
