"""The ETag store on Redis: one key per page (``{p}:budget:etag:{identity}:{sha1}``, 30-day TTL),
so the cluster asks a page conditionally whichever worker saw it last."""

from __future__ import annotations

import contextlib
import json

from scrapy.settings import BaseSettings

from scraper.distributed.connection import RedisLink, RedisUnavailable, get_link
from scraper.distributed.keys import Keys
from scraper.downloadermiddlewares.conditional import ConditionalRequestMiddleware
from scraper.stores.etags import ETAG_KEEP_S, PageTag


class RedisEtagStore:
    def __init__(self, link: RedisLink, keys: Keys) -> None:
        self.link = link
        self.keys = keys

    def get(self, identity: str, url: str) -> PageTag | None:
        try:
            raw = self.link.client.get(self.keys.etag(identity, url))
        except RedisUnavailable:  # asked unconditionally: a full answer, never a wrong one
            return None
        if not raw:
            return None
        etag, link = json.loads(raw)
        return etag, link

    def remember(self, identity: str, pages: dict[str, PageTag]) -> None:
        pipe = self.link.client.pipeline(transaction=True)
        for url, (etag, link) in pages.items():
            pipe.set(self.keys.etag(identity, url), json.dumps([etag, link]),
                     ex=int(ETAG_KEEP_S))
        with contextlib.suppress(RedisUnavailable):  # at close: next round asks afresh
            pipe.execute()

    def close(self) -> None:
        """The connection is the process's shared one (:mod:`.connection`)."""


class RedisConditionalRequestMiddleware(ConditionalRequestMiddleware):
    @classmethod
    def open_store(cls, settings: BaseSettings) -> RedisEtagStore:  # type: ignore[override]
        return RedisEtagStore(get_link(settings["REDIS_URL"]), Keys.from_settings(settings))
