"""Content-level dedup: an item whose content the spider already collected is dropped.

One rule for both modes; only the store differs (``CONTENTHASH_STORAGE``: SQLite on one machine,
Redis across machines, see :mod:`scraper.stores.base`):

* ``process_item`` stamps ``content_hash`` and *claims* it: an item whose hash is written
  already, or in flight in this process, is dropped as a :class:`DuplicateItem`;
* once the item store has written the item (``item_written``, in the same call as the write;
  without the item store, a feeds-only run, once every pipeline has passed it: ``item_scraped``)
  the claim is *confirmed*: the hash is stored;
* an item that is not written after all (a later pipeline failed or dropped it) *releases* it.

A kill between writing an item and confirming its hash may duplicate a line, never lose one;
confirmed as it is written, one item at most is in that gap, so a kill duplicates at most one.
A hash a full disk keeps out of the store is no gap: the item store takes that line back.
The store is per spider, shared by all its shards (and, on Redis, by every machine), so a new
shard plan never makes collected content new again. ``CONTENTHASH_RESET`` (or ``-a
contenthash_reset=1``) ignores the hashes written before this run (a hash's value is its item's
``collected_at``); it still stores new ones, and dedups within the run.

While the store is away (Redis) an item waits for it; at a stop it is dropped unwritten (its
page is fetched again next round) rather than risk a duplicate.
"""

from __future__ import annotations

import sqlite3
from typing import Any, NoReturn, Protocol

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from scraper.dedup.sqlitehashes import STORE_KIND
from scraper.exceptions import DuplicateItem
from scraper.items import content_hash, is_deduplicated
from scraper.signals import item_written
from scraper.stores.base import Outage, StoreUnavailable, build_store
from scraper.utils.diskspace import is_disk_full, report_disk_full, round_closed_when_full
from scraper.utils.engine import engine_closing
from scraper.utils.spiderargs import reset_requested
from scraper.utils.stamps import next_second_stamp


class ContentHashPipeline:
    """The rule above over the store ``CONTENTHASH_STORAGE`` names."""

    store: ContentHashStorage

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        # Claimed, not yet written: a second copy in that gap is a duplicate.
        self.in_flight: set[str] = set()
        crawler.signals.connect(self.confirm_written, signal=item_written)
        # A feeds-only run has no item store to say so: its items count once every pipeline
        # passed them. With the store, item_written has confirmed them already.
        crawler.signals.connect(self.confirm_written, signal=signals.item_scraped)
        crawler.signals.connect(self.item_failed, signal=signals.item_error)
        crawler.signals.connect(self.item_failed, signal=signals.item_dropped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentHashPipeline:
        return cls(crawler)

    def open_spider(self) -> None:
        reset = reset_requested(self.crawler, STORE_KIND)
        assert self.crawler.spider is not None
        with round_closed_when_full():
            store = build_store(self.crawler, "CONTENTHASH_STORAGE")
            store.open_spider(self.crawler.spider.name, next_second_stamp() if reset else "")
            self.store = store

    def close_spider(self) -> None:
        for digest in list(self.in_flight):  # claimed, never written: free them at once
            self.store.release(digest)
        self.in_flight.clear()
        if hasattr(self, "store"):  # not when the disk was too full to open it
            taken = getattr(self.store, "taken_over", 0)  # Redis: a dead worker's claims
            if taken:
                self.stats.set_value("contenthash/claims_taken_over", taken)
            self.store.close_spider()

    async def process_item(self, item: scrapy.Item) -> scrapy.Item:
        digest = self.stamp(item)
        if not is_deduplicated(item):
            return item  # an observation (a page snapshot): recorded every time it is seen
        if digest in self.in_flight or not await self._claim(digest):
            self.duplicate(digest)
        self.in_flight.add(digest)
        return item

    async def _claim(self, digest: str) -> bool:
        while True:
            try:
                return self.store.claim(digest)
            except StoreUnavailable:
                # Pause this item (and, as the scraper fills up, the crawl) until the store is
                # back; at a stop, leave the page for the next round instead of risking a
                # duplicate.
                if not await self.store.wait_until_up(lambda: engine_closing(self.crawler)):
                    self.stats.inc_value("contenthash/unchecked_at_close")
                    raise DropItem("the content-hash store is unreachable at close: not "
                                   "written; the page is fetched again next round",
                                   log_level="INFO") from None

    @staticmethod
    def stamp(item: scrapy.Item) -> str:
        digest = item["content_hash"] = content_hash(item)
        return digest

    def duplicate(self, digest: str) -> NoReturn:
        self.stats.inc_value("contenthash/dropped")
        raise DuplicateItem(f"content already collected ({digest[:12]})", log_level="DEBUG")

    def confirm_written(self, item: Any, **kwargs: Any) -> bool:
        """Store the hash of an item just written; False when a full disk kept it out, and the
        item store takes the line back (written with no hash, the next round wrote it again:
        a duplicate line per item the round wrote after the store's disk filled)."""
        digest = item.get("content_hash")
        if digest not in self.in_flight:
            return True
        try:
            self.store.confirm(digest, item.get("collected_at") or "")
        except (OSError, sqlite3.OperationalError) as exc:
            if not is_disk_full(exc):
                raise
            report_disk_full("cannot write a store", exc)  # said once, by whichever came first
            return False  # still claimed: the drop that follows releases it
        self.in_flight.discard(digest)
        self.stats.inc_value("contenthash/stored")
        return True

    def item_failed(self, item: Any, exception: BaseException | None = None,
                    **kwargs: Any) -> None:
        # A second copy dropped as a duplicate carries the hash of the copy still in flight:
        # that one's claim stays.
        if isinstance(exception, DuplicateItem):
            return
        digest = item.get("content_hash")
        if digest in self.in_flight:
            self.in_flight.discard(digest)
            self.store.release(digest)


class ContentHashStorage(Outage, Protocol):
    """Content-level dedup: claim a hash, confirm it once written, release it if not."""

    def open_spider(self, spider: str, ignore_before: str) -> None:
        """Hashes written before ``ignore_before`` (``collected_at`` format; "" = none) count
        as not written."""

    def claim(self, digest: str) -> bool:
        """True if this process may write the content."""

    def confirm(self, digest: str, collected_at: str) -> None: ...

    def release(self, digest: str) -> None: ...

    def close_spider(self) -> None: ...
