"""scrapy-deltafetch, kept, in a thin subclass that fits this project and Scrapy 2.19.

What upstream's ``DeltaFetch`` 2.1.0 lacks here, and what this subclass changes:

* it only has a sync ``process_spider_output``, which Scrapy ≥ 2.16 refuses to load: here it is
  an async generator;
* it opens ``{DELTAFETCH_DIR}/{spider}.db`` through ``dbm`` (which is ``dbm.dumb`` on this
  Python, where two processes lose each other's keys): here the spider's one store, shared by
  all its shards, is the class ``DELTAFETCH_STORAGE`` names (:mod:`scraper.stores.base`):
  SQLite in WAL mode on one machine (:mod:`scraper.dedup.sqliteurls`), Redis for a
  cluster (:mod:`scraper.dedup.redisurls`);
* it deletes a database it cannot open: here the file is moved aside and an error logged;
* while the store is away (Redis), a page's output waits; a lookup that fails anyway counts as
  "not collected" (the page is fetched again, never skipped by mistake), and a replay that
  fails fetches the skipped page instead;
* ``DELTAFETCH_RESET`` / ``-a deltafetch_reset=1`` deletes the database, for every shard at
  once: here it ignores what was recorded before, for this run only (every page is fetched; new
  records are still written), so other shards and later runs keep the memory;
* it only sees what the spider yields, so a page reached through a redirect (``moved.html →
  page1.html``) is recorded under its final URL only and the redirecting link fetched every
  round: here each URL that redirected to a recorded page is recorded with it, its one link
  the page (so a later round skips it and replays the page), and when a redirect's target was
  dropped as already requested this round the redirecting URL is recorded so at once;
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

import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy_deltafetch.middleware import DeltaFetch

from scraper.exceptions import DuplicateItem
from scraper.stores.base import Outage, StoreUnavailable, build_store
from scraper.utils.diskspace import round_closed_when_full, skipped_when_full
from scraper.utils.engine import engine_closing
from scraper.utils.spiderargs import reset_requested

logger = logging.getLogger(__name__)

STORE_KIND = "deltafetch"


class ShardedDeltaFetch(DeltaFetch):
    """DeltaFetch with one crash-safe store per spider (all shards) and async output."""

    db: DeltaFetchStorage
    crawler: Crawler
    _pending: dict[int, bytes]
    _open_pages: set[bytes]
    _awaiting: set[bytes]
    _links: dict[bytes, list[str]]
    _replayed: set[bytes]
    _redirects: dict[bytes, tuple[str, list[bytes]]]

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ShardedDeltaFetch:
        middleware = super().from_crawler(crawler)
        middleware._pending = {}       # id(item) → key of the page it came from
        middleware._open_pages = set()  # pages whose output is still being read
        middleware._awaiting = set()    # pages whose item passed before their output ended
        middleware._links = {}          # page → its links, while its item is in the pipelines
        middleware._replayed = set()    # recorded pages whose links were replayed this round
        middleware._redirects = {}      # page → (its URL, keys of URLs that redirected to it)
        middleware.crawler = crawler
        crawler.signals.connect(middleware.item_passed, signal=signals.item_scraped)
        crawler.signals.connect(middleware.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(middleware.item_dropped, signal=signals.item_error)
        crawler.signals.connect(middleware.request_dropped, signal=signals.request_dropped)
        return middleware

    def spider_opened(self, spider: Spider) -> None:
        self.refresh_after: float | None = getattr(spider, "refresh_after", None)
        self.forget = reset_requested(self.crawler, STORE_KIND)
        self.opened_at = time.time()
        if self.forget:
            logger.warning("deltafetch reset: pages collected before are fetched again in this "
                           "run (the %s memory itself is kept and updated)", spider.name)
        with round_closed_when_full():
            db = build_store(self.crawler, "DELTAFETCH_STORAGE")
            db.open_spider(spider.name, self.refresh_after)
            self.db = db

    def spider_closed(self, spider: Spider) -> None:
        if hasattr(self, "db"):  # not when the disk was too full to open it
            self.db.close_spider()

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        db = getattr(self, "db", None)  # None: the disk was too full to open it
        if db is not None and not db.up:  # hold this page's output until the store answers
            await db.wait_until_up(lambda: engine_closing(self.crawler))
        request = response.request
        assert request is not None, "a response reaches the spider with its request"
        page = self._get_key(request)
        redirected_from = self._redirect_keys(request)
        if redirected_from:  # recorded with the page, if it gives an item
            self._redirects[page] = (response.url, redirected_from)
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
            # A recorded page always has its links stored, in the same transaction: now if its
            # item is written already, else when it is (a page without an item is never
            # recorded, and its links are never read).
            if page in self._awaiting:
                self._record(page, followed)
            elif page in self._pending.values():  # few: the items in the pipelines
                self._links[page] = followed
        finally:
            self._open_pages.discard(page)
            self._awaiting.discard(page)

    def _replay(self, skipped: Request) -> Iterator[Request]:
        """The links of a skipped (already collected) page, as if it had been fetched again.

        Without this, pages reached only through a collected page would be lost whenever a
        round ends early (a kill, a full disk, an error on the way), until ``refresh_after``.
        Links of links that are collected too are walked the same way, each page once a round.
        """
        try:
            children = list(self._walk_links(skipped))
        except StoreUnavailable:
            self.stats.inc_value("deltafetch/unknown")
            children = [skipped]  # no links to replay: fetch the page itself
        yield from children

    def _walk_links(self, skipped: Request) -> Iterator[Request]:
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

    def _redirect_keys(self, request: Request) -> list[bytes]:
        page = self._get_key(request)
        keys = (self._get_key(Request(url)) for url in request.meta.get("redirect_urls", ()))
        return [key for key in keys if key != page]

    def request_dropped(self, request: Request, **kwargs: Any) -> None:
        """A redirect whose target this round had asked for already (here, or on another
        machine: the distributed dupefilter is shared) is recorded at once, its one link the
        target: a later round skips it and reaches the target through the replay — skipped too
        if collected, fetched if not — so nothing is stranded even if the target never is."""
        with skipped_when_full():
            self._record_redirects(request.url, self._redirect_keys(request),
                                   str(time.time()))

    def _seen_recently(self, request: Request) -> bool:
        """Collected within ``refresh_after``; under a reset, only if collected in this run.
        Unknown (the store is away) is not seen: fetched again rather than skip a new page."""
        try:
            stored_at = self.db.get(self._get_key(request))
        except StoreUnavailable:
            self.stats.inc_value("deltafetch/unknown")
            return False
        if stored_at is None:
            return False
        if self.forget and float(stored_at) < self.opened_at:
            return False
        if self.refresh_after is None:
            return True
        return time.time() - float(stored_at) < self.refresh_after

    def _record(self, page: bytes, links: list[str] | None = None) -> None:
        now = str(time.time())
        with skipped_when_full():
            self.db.record(page, now, links)
            self.stats.inc_value("deltafetch/stored")
            if page in self._redirects:
                self._record_redirects(*self._redirects.pop(page), now)

    def _record_redirects(self, target: str, keys: list[bytes], now: str) -> None:
        """URLs that redirected to ``target``: collected with it, and linking to it."""
        for key in keys:
            self.db.record(key, now, [target])
            self.stats.inc_value("deltafetch/stored_redirects")

    def item_passed(self, item: Any, **kwargs: Any) -> None:
        """The item is written: its page is done once its links are stored too."""
        page = self._pending.pop(id(item), None)
        if page is None:
            return
        if page in self._open_pages:
            self._awaiting.add(page)
        else:
            self._record(page, self._links.pop(page, None))

    def item_dropped(self, item: Any, exception: BaseException | None = None,
                     **kwargs: Any) -> None:
        """A duplicate of content already written counts as done; any other drop or error
        (a full disk, say) leaves the page to be fetched again."""
        if isinstance(exception, DuplicateItem):
            self.item_passed(item)
        else:
            page = self._pending.pop(id(item), None)
            if page is not None and page not in self._pending.values():
                self._links.pop(page, None)


class DeltaFetchStorage(Outage, Protocol):
    """URL-level dedup: request key → time collected, and the page's outgoing links."""

    def open_spider(self, spider: str, refresh_after: float | None) -> None: ...

    def get(self, key: bytes) -> str | None:
        """When the page was collected (``str(time.time())``), None if never."""

    def links(self, key: bytes) -> list[str]: ...

    def record(self, key: bytes, value: str, links: list[str] | None = None) -> None:
        """The page is collected (and, unless None, its links are these): all or nothing."""

    def close_spider(self) -> None: ...
