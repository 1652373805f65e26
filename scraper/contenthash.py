"""Content-level dedup: an item whose content the spider already collected is dropped.

One rule for both modes; only the store differs (SQLite on one machine, Redis across machines):

* ``process_item`` stamps ``content_hash`` and *claims* it: an item whose hash is written
  already, or in flight in this process, is dropped as a :class:`DuplicateItem`;
* once every pipeline has passed the item (``item_scraped``: the item store has written it) the
  claim is *confirmed*: the hash is stored;
* an item that is not written after all (a later pipeline failed or dropped it) *releases* it.

A kill between writing an item and confirming its hash may duplicate a line, never lose one.
The store is per spider, shared by all its shards (and, on Redis, by every machine), so a new
shard plan never makes collected content new again. ``CONTENTHASH_RESET`` (or ``-a
contenthash_reset=1``) ignores the hashes written before this run (a hash's value is its item's
``collected_at``); it still stores new ones, and dedups within the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn, Protocol

import scrapy
from scrapy import Spider, signals
from scrapy.crawler import Crawler

from scraper.diskspace import round_closed_when_full, skipped_when_full
from scraper.exceptions import DuplicateItem
from scraper.items import content_hash, is_deduplicated, utc_stamp
from scraper.layout import DataLayout
from scraper.spiderargs import reset_requested
from scraper.stores.sqlite import SqliteMapping

STORE_KIND = "contenthash"


class ContentHashStore(Protocol):
    def claim(self, digest: str) -> bool:
        """True if this process may write the content."""

    def confirm(self, digest: str, collected_at: str) -> None:
        """The content is written: record it as collected."""

    def release(self, digest: str) -> None:
        """The content was claimed but not written."""

    def close(self) -> None: ...


class SqliteContentHashStore(SqliteMapping):
    """The one-machine store: ``{data_dir}/state/contenthash/{spider}.sqlite``.

    A claim is local to the process (its ``in_flight`` set): two shards that meet the same
    content at the same instant may both write it — a race of one item per page, the bound
    README's "Dedup" gives.
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


class ContentHashDedup:
    """The rule above over any :class:`ContentHashStore`; subclasses open the store."""

    store: ContentHashStore

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        # Claimed, not yet written: a second copy in that gap is a duplicate.
        self.in_flight: set[str] = set()
        crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self.item_failed, signal=signals.item_error)
        crawler.signals.connect(self.item_failed, signal=signals.item_dropped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentHashDedup:
        return cls(crawler)

    def open_store(self, spider: Spider, ignore_before: str) -> ContentHashStore:
        """The spider's store; hashes written before ``ignore_before`` (``collected_at``
        format; "" = none) count as not written."""
        raise NotImplementedError

    def open_spider(self) -> None:
        reset = reset_requested(self.crawler, STORE_KIND)
        with round_closed_when_full():
            self.store = self.open_store(self.crawler.spider, utc_stamp() if reset else "")

    def close_spider(self) -> None:
        for digest in list(self.in_flight):  # claimed, never written: free them at once
            self.store.release(digest)
        self.in_flight.clear()
        if hasattr(self, "store"):  # not when the disk was too full to open it
            self.store.close()

    def process_item(self, item: scrapy.Item) -> scrapy.Item:
        digest = self.stamp(item)
        if not is_deduplicated(item):
            return item  # an observation (a page snapshot): recorded every time it is seen
        if digest in self.in_flight or not self.store.claim(digest):
            self.duplicate(digest)
        self.in_flight.add(digest)
        return item

    @staticmethod
    def stamp(item: scrapy.Item) -> str:
        digest = item["content_hash"] = content_hash(item)
        return digest

    def duplicate(self, digest: str) -> NoReturn:
        self.stats.inc_value("contenthash/dropped")
        raise DuplicateItem(f"content already collected ({digest[:12]})", log_level="DEBUG")

    def item_scraped(self, item: Any, **kwargs: Any) -> None:
        digest = item.get("content_hash")
        if digest in self.in_flight:
            self.in_flight.discard(digest)
            with skipped_when_full():
                self.store.confirm(digest, item.get("collected_at") or "")
                self.stats.inc_value("contenthash/stored")

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


def open_sqlite_store(layout: DataLayout, spider: str,
                      ignore_before: str) -> SqliteContentHashStore:
    """The spider's shared store, with the per-shard stores of earlier versions merged in."""
    store = SqliteContentHashStore(layout.contenthash_db(spider), ignore_before=ignore_before)
    store.absorb(layout.shard_contenthash_dbs(spider))
    return store
