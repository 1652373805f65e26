"""scrapy-redis's RFPDupeFilter, keyed by the project's request fingerprinter.

Upstream (0.9.1) computes its own sha1 over method, canonical URL and body, ignoring Scrapy's
``REQUEST_FINGERPRINTER_CLASS`` / ``crawler.request_fingerprinter``: two requests the project
calls the same could be fetched twice, and the Redis set would disagree with deltafetch (which
uses the crawler's fingerprinter). Here the fingerprint is ``crawler.request_fingerprinter``'s,
hex-encoded, and :meth:`close` never deletes the shared set (other workers still use it; the
round's seeding clears it — see :mod:`scraper.cluster.rounds`).
"""

from __future__ import annotations

from typing import Any

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy_redis.dupefilter import RFPDupeFilter

from scraper.redis.connection import get_link
from scraper.redis.keys import Keys


class RedisDupeFilter(RFPDupeFilter):
    def __init__(self, server: Any, key: str, debug: bool = False, *,
                 fingerprinter: Any = None) -> None:
        super().__init__(server, key, debug)
        self.fingerprinter = fingerprinter

    @classmethod
    def from_crawler(cls, crawler: Crawler, spider_name: str | None = None) -> RedisDupeFilter:
        settings = crawler.settings
        keys = Keys.from_settings(settings)
        name = spider_name or (crawler.spider.name if crawler.spider else None)
        if name is None:
            raise ValueError("RedisDupeFilter needs the spider's name for its key")
        return cls(get_link(settings["REDIS_URL"]).client, keys.dupefilter(name),
                   debug=settings.getbool("DUPEFILTER_DEBUG"),
                   fingerprinter=crawler.request_fingerprinter)

    @classmethod
    def from_spider(cls, spider: Spider) -> RedisDupeFilter:
        # What scrapy-redis's scheduler calls (in open()): the crawler is there by then.
        return cls.from_crawler(spider.crawler, spider.name)

    def request_fingerprint(self, request: Request) -> str:
        if self.fingerprinter is None:  # built by hand without a crawler: upstream's sha1
            return super().request_fingerprint(request)
        return self.fingerprinter.fingerprint(request).hex()

    def close(self, reason: str = "") -> None:
        """Keep the fingerprints: SCHEDULER_PERSIST semantics for the shared set."""
