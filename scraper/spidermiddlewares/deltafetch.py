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
  the pipelines (``item_scraped``) or been dropped by them as a duplicate of content already
  written (``item_dropped`` with :class:`DuplicateItem`);
* a recorded page is fetched again once ``refresh_after`` (spider attribute, seconds) has passed;
* a recorded page's outgoing links are stored with it, and when a request for it is skipped its
  links are followed instead: a round cut short (kill, full disk) never strands the pages behind
  it, and nothing is lost for want of a re-fetch.

Its semantics are upstream's: meta ``deltafetch_key`` and ``deltafetch_enabled``, stats
``deltafetch/skipped`` and ``deltafetch/stored``, start requests never filtered, a page recorded
only when it yields an item.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy_deltafetch.middleware import DeltaFetch

from scraper.diskspace import round_closed_when_full, skipped_when_full
from scraper.exceptions import DuplicateItem
from scraper.layout import DELTAFETCH_DB_NAME as DB_NAME
from scraper.layout import worker_slug
from scraper.stores.sqlite import SqliteMapping, move_aside

logger = logging.getLogger(__name__)

STORE_KIND = "deltafetch"


class DeltaFetchStore(SqliteMapping):
    """Upstream's mapping (request key → time stored), plus each page's outgoing links."""

    SCHEMA = SqliteMapping.SCHEMA + (
        "CREATE TABLE IF NOT EXISTS links (key BLOB PRIMARY KEY, urls TEXT NOT NULL);"
    )

    def links(self, key: bytes) -> list[str]:
        row = self._conn.execute("SELECT urls FROM links WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else []

    def set_links(self, key: bytes, urls: list[str]) -> None:
        self._conn.execute("INSERT OR REPLACE INTO links VALUES (?, ?)", (key, json.dumps(urls)))


class ShardedDeltaFetch(DeltaFetch):
    """DeltaFetch with one crash-safe SQLite store per spider-shard and async spider output."""

    db: DeltaFetchStore

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ShardedDeltaFetch:
        middleware = super().from_crawler(crawler)
        middleware._pending = {}       # id(item) → key of the page it came from
        middleware._open_pages = set()  # pages whose output is still being read
        middleware._awaiting = set()    # pages whose item passed before their output ended
        middleware._replayed = set()    # recorded pages whose links were replayed this round
        crawler.signals.connect(middleware.item_passed, signal=signals.item_scraped)
        crawler.signals.connect(middleware.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(middleware.item_dropped, signal=signals.item_error)
        return middleware

    def spider_opened(self, spider: Spider) -> None:
        # DELTAFETCH_DIR is {data_dir}/state/deltafetch (set by scrapy crawl): a store per shard.
        path = Path(self.dir) / worker_slug(spider.name, spider.shard) / DB_NAME
        if (self.reset or getattr(spider, "deltafetch_reset", False)) and path.exists():
            logger.warning("DELTAFETCH_RESET: moved %s aside to %s", path, move_aside(path).name)
        self.refresh_after: float | None = getattr(spider, "refresh_after", None)
        with round_closed_when_full():
            self.db = DeltaFetchStore(path, kind=STORE_KIND)

    def spider_closed(self, spider: Spider) -> None:
        if hasattr(self, "db"):  # not when the disk was too full to open it
            self.db.close()

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        page = self._get_key(response.request)
        self._open_pages.add(page)
        followed: list[str] = []
        try:
            async for element in result:
                if isinstance(element, Request):
                    followed.append(element.url)  # skipped ones too: the replay walks them
                    if self._is_enabled_for_request(element) and self._seen_recently(element):
                        logger.debug("Ignoring already visited: %s", element)
                        self.stats.inc_value("deltafetch/skipped")
                        for request in self._replay(element):
                            yield request
                        continue
                else:
                    self._pending[id(element)] = page
                yield element
            # Links first, record second: a recorded page always has its links stored.
            with skipped_when_full():
                self.db.set_links(page, followed)
                if page in self._awaiting:
                    self._record(page)
        finally:
            self._open_pages.discard(page)
            self._awaiting.discard(page)

    def _replay(self, skipped: Request) -> Iterator[Request]:
        """The links of a skipped (already collected) page, as if it had been fetched again.

        Without this, pages reached only through a collected page would be lost whenever a
        round ends early (a kill, a full disk, an error on the way), until ``refresh_after``.
        Links of links that are collected too are walked the same way, each page once a round.
        """
        stack = [skipped]
        while stack:
            request = stack.pop()
            key = self._get_key(request)
            if key in self._replayed:
                continue
            self._replayed.add(key)
            for url in self.db.links(key):
                child = request.replace(url=url)
                if self._seen_recently(child):
                    stack.append(child)
                else:
                    self.stats.inc_value("deltafetch/replayed")
                    yield child

    def _seen_recently(self, request: Request) -> bool:
        stored_at = self.db.get(self._get_key(request))
        if stored_at is None:
            return False
        if self.refresh_after is None:
            return True
        return time.time() - float(stored_at) < self.refresh_after

    def _record(self, page: bytes) -> None:
        with skipped_when_full():
            self.db[page] = str(time.time())
            self.stats.inc_value("deltafetch/stored")

    def item_passed(self, item: Any, **kwargs: Any) -> None:
        """The item is written: its page is done once its links are stored too."""
        page = self._pending.pop(id(item), None)
        if page is None:
            return
        if page in self._open_pages:
            self._awaiting.add(page)
        else:
            self._record(page)

    def item_dropped(self, item: Any, exception: BaseException | None = None,
                     **kwargs: Any) -> None:
        """A duplicate of content already written counts as done; any other drop or error
        (a full disk, say) leaves the page to be fetched again."""
        if isinstance(exception, DuplicateItem):
            self.item_passed(item)
        else:
            self._pending.pop(id(item), None)
