"""``ETAG_STORAGE`` on Redis: one key per page (``{p}:budget:etag:{identity}:{sha1}``, 30-day TTL),
so the cluster asks a page conditionally whichever worker saw it last."""

from __future__ import annotations

import json

from scrapy.crawler import Crawler

from scraper.budget.etags import ETAG_KEEP_S, PageTag
from scraper.redis.connection import RedisLink, RedisOutage, get_link
from scraper.redis.keys import Keys


class RedisEtagStore(RedisOutage):
    def __init__(self, link: RedisLink, keys: Keys) -> None:
        self.link = link
        self.keys = keys

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisEtagStore:
        settings = crawler.settings
        return cls(get_link(settings["REDIS_URL"]), Keys.from_settings(settings))

    def get(self, identity: str, url: str) -> PageTag | None:
        raw = self.link.client.get(self.keys.etag(identity, url))
        if not raw:
            return None
        etag, link = json.loads(raw)
        return etag, link

    def remember(self, identity: str, pages: dict[str, PageTag]) -> None:
        pipe = self.link.client.pipeline(transaction=True)
        for url, (etag, link) in pages.items():
            pipe.set(self.keys.etag(identity, url), json.dumps([etag, link]),
                     ex=int(ETAG_KEEP_S))
        pipe.execute()

    def close(self) -> None:
        """The connection is the process's shared one (:mod:`.connection`)."""
