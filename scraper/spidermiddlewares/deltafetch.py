"""scrapy-deltafetch, kept, in a thin subclass that fits this project and Scrapy 2.19.

What upstream's ``DeltaFetch`` 2.1.0 lacks here, and what this subclass changes:

* it only has a sync ``process_spider_output``, which Scrapy ≥ 2.16 refuses to load: here it is
  an async generator;
* it opens ``{DELTAFETCH_DIR}/{spider}.db``, one file for every shard, through ``dbm`` (which is
  ``dbm.dumb`` on this Python, where two processes lose each other's keys): here each
  spider-shard has its own SQLite store under ``{data_dir}/state/deltafetch/{spider}-{i}of{N}/``;
* it deletes a database it cannot open: here the file is moved aside and an error logged;
* it records a page the moment its item leaves the spider, so a kill before the item reaches the
  item store would skip that page forever: here the record is written once the item has passed
  the pipelines (``item_scraped``) or been dropped by them as a duplicate (``item_dropped``);
* a recorded page is fetched again once ``refresh_after`` (spider attribute, seconds) has passed.

Its semantics are upstream's: meta ``deltafetch_key`` and ``deltafetch_enabled``, stats
``deltafetch/skipped`` and ``deltafetch/stored``, start requests never filtered, a page recorded
only when it yields an item.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy_deltafetch.middleware import DeltaFetch

from scraper.layout import DELTAFETCH_DB_NAME as DB_NAME
from scraper.layout import worker_slug
from scraper.stores.sqlite import SqliteMapping, move_aside

logger = logging.getLogger(__name__)

STORE_KIND = "deltafetch"


class ShardedDeltaFetch(DeltaFetch):
    """DeltaFetch with one crash-safe SQLite store per spider-shard and async spider output."""

    db: SqliteMapping

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ShardedDeltaFetch:
        middleware = super().from_crawler(crawler)
        middleware._pending: dict[int, bytes] = {}
        crawler.signals.connect(middleware.item_passed, signal=signals.item_scraped)
        crawler.signals.connect(middleware.item_passed, signal=signals.item_dropped)
        return middleware

    def spider_opened(self, spider: Spider) -> None:
        # DELTAFETCH_DIR is {data_dir}/state/deltafetch (set by scrapy crawl): a store per shard.
        path = Path(self.dir) / worker_slug(spider.name, spider.shard) / DB_NAME
        if (self.reset or getattr(spider, "deltafetch_reset", False)) and path.exists():
            logger.warning("DELTAFETCH_RESET: moved %s aside to %s", path, move_aside(path).name)
        self.db = SqliteMapping(path, kind=STORE_KIND)
        self.refresh_after: float | None = getattr(spider, "refresh_after", None)

    def spider_closed(self, spider: Spider) -> None:
        self.db.close()

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for element in result:
            if isinstance(element, Request):
                if self._is_enabled_for_request(element) and self._seen_recently(element):
                    logger.debug("Ignoring already visited: %s", element)
                    self.stats.inc_value("deltafetch/skipped")
                    continue
            else:
                self._pending[id(element)] = self._get_key(response.request)
            yield element

    def _seen_recently(self, request: Request) -> bool:
        stored_at = self.db.get(self._get_key(request))
        if stored_at is None:
            return False
        if self.refresh_after is None:
            return True
        return time.time() - float(stored_at) < self.refresh_after

    def item_passed(self, item: Any, **kwargs: Any) -> None:
        """The item is written (or was a duplicate of one written): its page is now done."""
        key = self._pending.pop(id(item), None)
        if key is not None:
            self.db[key] = str(time.time())
            self.stats.inc_value("deltafetch/stored")
