"""Done with a leased request: the acks of the shared queue's leases (Redis mode only).

A request taken from Redis stays leased to its worker (:mod:`scraper.distributed.rounds`) until
what it produced is safe, so a box killed at any instant loses none of the round's pages:

* a response: once its callback's output has all gone through the spider middlewares (items
  on their way to the pipelines, links queued in Redis) — :class:`LeaseAckSpiderMiddleware`,
  the outermost spider middleware;
* a retry or a redirect: the new request carries the lease and frees it in the script that
  queues it (:mod:`scraper.distributed.scheduler`);
* a download that failed for good: when the failure leaves the downloader middlewares, none of
  them having made a retry of it — :class:`LeaseAckDownloaderMiddleware`, the outermost.

An ack that does not arrive (Redis away at that instant) costs nothing: a worker whose engine
goes idle drops its leases, since all it took is done by then.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

LEASE_META = "lease"
"""The lease id of a request taken from the shared queue (this worker's, never queued)."""


class Leased(bytes):
    """A start entry as scrapy-redis's ``next_requests`` hands it on, with its lease id."""

    lease: str = ""

    @classmethod
    def of(cls, lease: str, data: bytes) -> Leased:
        entry = cls(data)
        entry.lease = lease
        return entry


def ack(crawler: Crawler, request: Request) -> None:
    """Free ``request``'s lease, if it has one (once; Redis away: the idle worker drops it)."""
    from scraper.distributed.connection import RedisUnavailable, get_link
    from scraper.distributed.keys import Keys
    from scraper.distributed.rounds import get_round

    lease = request.meta.pop(LEASE_META, None)
    spider = crawler.spider
    if not lease or spider is None:
        return
    spider_round = get_round(get_link(crawler.settings["REDIS_URL"]),
                             Keys.from_settings(crawler.settings), spider.name)
    with contextlib.suppress(RedisUnavailable):
        spider_round.ack(lease)


class _Acks:
    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.get("REDIS_URL"):
            raise NotConfigured("no REDIS_URL: one-machine mode")
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        return cls(crawler)


class LeaseAckSpiderMiddleware(_Acks):
    async def process_spider_output(self, response: Response, result: AsyncIterator[Any],
                                    spider: Spider | None = None) -> AsyncIterator[Any]:
        try:
            async for element in result:
                yield element
        finally:  # a callback that raised is done too: its page is not asked again
            if response.request is not None:
                ack(self.crawler, response.request)


class LeaseAckDownloaderMiddleware(_Acks):
    def process_exception(self, request: Request, exception: BaseException,
                          spider: Spider | None = None) -> None:
        ack(self.crawler, request)
