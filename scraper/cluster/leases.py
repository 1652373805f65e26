"""Done with a leased request: the acks of the shared queue's leases (Redis mode only).

A request taken from Redis stays leased to its worker (:mod:`scraper.cluster.rounds`) until
what it produced is safe, so a box killed at any instant loses none of the round's pages:

* a response: once its callback's output has all gone through the spider middlewares (items
  on their way to the pipelines, links queued in Redis) — :class:`LeaseAckSpiderMiddleware`,
  the outermost spider middleware;
* a retry or a redirect: the new request carries the lease and frees it in the script that
  queues it (:mod:`scraper.cluster.scheduler`);
* a download that failed for good: when the failure leaves the downloader middlewares, none of
  them having made a retry of it — :class:`LeaseAckDownloaderMiddleware`, the outermost;
* a chain this worker goes on with itself (a search slice's next page, the probes that cut it):
  the callback hands the lease on to the request that continues it (:func:`hand_on`), which
  stays in this worker (:data:`LOCAL_META`, never the shared queue); the lease is freed when a
  response's output continues it no more. A box killed mid-chain has its entry given back,
  and the whole chain is done again elsewhere.

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
LOCAL_META = "lease_local"
"""True on a request this worker sends itself, under the lease of the one it continues: the
scheduler keeps it out of the shared queue (its meta need not be JSON)."""


class Leased(bytes):
    """A start entry as scrapy-redis's ``next_requests`` hands it on, with its lease id."""

    lease: str = ""

    @classmethod
    def of(cls, lease: str, data: bytes) -> Leased:
        entry = cls(data)
        entry.lease = lease
        return entry


def hand_on(response: Response, request: Request) -> Request:
    """``request`` continues ``response``'s work in this worker, under its lease."""
    request.meta[LOCAL_META] = True
    lease = response.meta.get(LEASE_META)
    if lease:
        request.meta[LEASE_META] = lease
    return request


def ack(crawler: Crawler, request: Request) -> None:
    """Free ``request``'s lease, if it has one (once; Redis away: the idle worker drops it)."""
    from scraper.cluster.rounds import get_round
    from scraper.redis.connection import RedisUnavailable, get_link
    from scraper.redis.keys import Keys

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
        request = response.request
        lease = request.meta.get(LEASE_META) if request is not None else None
        handed_on = False
        try:
            async for element in result:
                if lease and isinstance(element, Request) and element.meta.get(
                        LEASE_META) == lease:
                    handed_on = True
                yield element
        finally:  # a callback that raised is done too: its page is not asked again
            if request is not None and not handed_on:
                ack(self.crawler, request)


class LeaseAckDownloaderMiddleware(_Acks):
    def process_exception(self, request: Request, exception: BaseException,
                          spider: Spider | None = None) -> None:
        ack(self.crawler, request)
