"""``DELTAFETCH_STORAGE`` on Redis: the spider's one store, for every machine.

* ``{p}:{spider}:deltafetch:{key}`` holds the time the page was collected, with
  ``refresh_after`` as the key's TTL (the stored time is still compared with the configured
  ``refresh_after``, so shortening it applies at once); without ``refresh_after`` no TTL;
* ``{p}:{spider}:links:{key}`` holds the page's links as JSON and outlives the record by
  ``LINKS_TTL_MARGIN``, so a skipped page always has its links to replay.

Records and links are written through the worker's write-behind queue (never lost to an
outage); lookups raise :class:`~scraper.redis.connection.RedisUnavailable` while Redis is
away (the middleware counts the page as not collected).
"""

from __future__ import annotations

import json

from scrapy.crawler import Crawler

from scraper.redis import defaults
from scraper.redis.connection import RedisLink, RedisOutage, as_text, get_link
from scraper.redis.keys import Keys
from scraper.redis.writebehind import WriteBehind, write_behind


class RedisDeltaFetchStore(RedisOutage):
    """The mapping ShardedDeltaFetch uses (key → time stored, plus links), on Redis."""

    def __init__(self, link: RedisLink, keys: Keys, writes: WriteBehind, spider: str = "",
                 refresh_after: float | None = None) -> None:
        self.link, self.keys, self.writes = link, keys, writes
        self.open_spider(spider, refresh_after)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisDeltaFetchStore:
        settings = crawler.settings
        return cls(get_link(settings["REDIS_URL"]), Keys.from_settings(settings),
                   write_behind(crawler))

    def open_spider(self, spider: str, refresh_after: float | None) -> None:
        self.spider = spider
        self.ttl = int(refresh_after) + 1 if refresh_after else None

    def get(self, key: bytes) -> str | None:
        value = self.link.client.get(self.keys.deltafetch(self.spider, key))
        return None if value is None else as_text(value)

    def _record_command(self, key: bytes, value: str) -> list[str]:
        command = ["SET", self.keys.deltafetch(self.spider, key), value]
        return command + (["EX", str(self.ttl)] if self.ttl else [])

    def links(self, key: bytes) -> list[str]:
        raw = self.link.client.get(self.keys.links(self.spider, key))
        return json.loads(raw) if raw else []

    def _links_command(self, key: bytes, urls: list[str]) -> list[str]:
        command = ["SET", self.keys.links(self.spider, key), json.dumps(urls)]
        if self.ttl:
            command += ["EX", str(self.ttl + defaults.LINKS_TTL_MARGIN)]
        return command

    def record(self, key: bytes, value: str, links: list[str] | None = None) -> None:
        """Links and record in one transaction."""
        if links is None:
            self.writes.submit(self._record_command(key, value))
        else:
            self.writes.submit(self._links_command(key, links),
                               self._record_command(key, value))

    def close_spider(self) -> None:
        """Nothing of its own: writes go through the worker's write-behind."""
