"""URL-level dedup (our scrapy-deltafetch subclass) on Redis, shared by the whole cluster.

Same semantics as :class:`~scraper.spidermiddlewares.deltafetch.ShardedDeltaFetch` — meta
``deltafetch_key``/``deltafetch_enabled``, stats ``deltafetch/*``, a page recorded once its
item is written, ``refresh_after``, the links replay, redirects and the reset switches — with
the spider's one store on Redis, for every machine, instead of its SQLite file:

* ``{p}:{spider}:deltafetch:{key}`` holds the time the page was collected, with
  ``refresh_after`` as the key's TTL (the stored time is still compared with the configured
  ``refresh_after``, so shortening it applies at once); without ``refresh_after`` no TTL;
* ``{p}:{spider}:links:{key}`` holds the page's links as JSON and outlives the record by
  ``LINKS_TTL_MARGIN``, so a skipped page always has its links to replay.

Records and links are written through the worker's write-behind queue (never lost to an
outage). While Redis is unreachable a page's output waits; a lookup that fails anyway counts as
"not collected" (the page is fetched again — never skipped by mistake), and a replay that fails
fetches the skipped page instead.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from scrapy import Request, Spider
from scrapy.http import Response

from scraper.distributed import defaults
from scraper.distributed.connection import RedisLink, RedisUnavailable, get_link
from scraper.distributed.keys import Keys
from scraper.distributed.worker import write_behind
from scraper.distributed.writebehind import WriteBehind
from scraper.engine import engine_closing
from scraper.spidermiddlewares.deltafetch import ShardedDeltaFetch


class RedisDeltaFetchStore:
    """The mapping ShardedDeltaFetch uses (key → time stored, plus links), on Redis."""

    def __init__(self, link: RedisLink, keys: Keys, spider: str, writes: WriteBehind,
                 refresh_after: float | None) -> None:
        self.link, self.keys, self.spider, self.writes = link, keys, spider, writes
        self.ttl = int(refresh_after) + 1 if refresh_after else None

    def get(self, key: bytes, default: str | None = None) -> str | None:
        value = self.link.client.get(self.keys.deltafetch(self.spider, key))
        return default if value is None else value.decode()

    def __contains__(self, key: bytes) -> bool:
        return self.get(key) is not None

    def __setitem__(self, key: bytes, value: str | bytes) -> None:
        self.writes.submit(self._record_command(key, value))

    def _record_command(self, key: bytes, value: str | bytes) -> list[str]:
        text = value.decode() if isinstance(value, bytes) else value
        command = ["SET", self.keys.deltafetch(self.spider, key), text]
        return command + (["EX", str(self.ttl)] if self.ttl else [])

    def links(self, key: bytes) -> list[str]:
        raw = self.link.client.get(self.keys.links(self.spider, key))
        return json.loads(raw) if raw else []

    def set_links(self, key: bytes, urls: list[str]) -> None:
        self.writes.submit(self._links_command(key, urls))

    def _links_command(self, key: bytes, urls: list[str]) -> list[str]:
        command = ["SET", self.keys.links(self.spider, key), json.dumps(urls)]
        if self.ttl:
            command += ["EX", str(self.ttl + defaults.LINKS_TTL_MARGIN)]
        return command

    def record(self, key: bytes, value: str, links: list[str]) -> None:
        """Links and record in one transaction."""
        self.writes.submit(self._links_command(key, links), self._record_command(key, value))

    def close(self) -> None:
        """Nothing of its own: writes go through the worker's write-behind."""


class RedisDeltaFetch(ShardedDeltaFetch):
    db: RedisDeltaFetchStore  # type: ignore[assignment]

    def spider_opened(self, spider: Spider) -> None:
        settings = self.crawler.settings
        self.link = get_link(settings["REDIS_URL"])
        self.open_memory(spider)
        self.db = RedisDeltaFetchStore(
            self.link, Keys.from_settings(settings), spider.name,
            write_behind(self.crawler), self.refresh_after)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]
                                    ) -> AsyncIterator[Any]:
        if not self.link.up:  # hold this page's output until the store answers again
            await self.link.wait_until_up(lambda: engine_closing(self.crawler))
        async for element in super().process_spider_output(response, result):
            yield element

    def _seen_recently(self, request: Request) -> bool:
        try:
            return super()._seen_recently(request)
        except RedisUnavailable:
            self.stats.inc_value("deltafetch/unknown")
            return False  # fetch it again rather than skip a page that may be new

    def _replay(self, skipped: Request) -> Iterator[Request]:
        try:
            children = list(super()._replay(skipped))
        except RedisUnavailable:
            self.stats.inc_value("deltafetch/unknown")
            children = [skipped]  # no links to replay: fetch the page itself
        yield from children

