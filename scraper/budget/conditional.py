"""Conditional requests to GitHub's API: ``If-None-Match`` with the page's last ETag.

GitHub answers an unchanged page with 304, which costs no rate limit (the budget middleware
counts it as free). A 304 has no body and may lack ``Link``, so the ``Link`` remembered with the
ETag is put back on it and paging goes on to pages that may have changed.

A page's ETag means "its items are collected": only a round that finished made sure of that for
every page it saw, so ETags are remembered at a ``finished`` close only; after a cut-short round
every page is asked afresh and nothing is stranded. For the same reason a search answer GitHub
marks ``incomplete_results: true`` (its search timed out and left results out) leaves no ETag.

The ETags live in the store ``ETAG_STORAGE`` names (:mod:`scraper.stores.base`). While it is
away a page is asked unconditionally (a full answer, never a wrong one), and ETags not
remembered at close are asked afresh next round.
"""

from __future__ import annotations

import contextlib
import re

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from scraper.budget.etags import EtagStorage, PageTag
from scraper.budget.limits import settings_identity
from scraper.budget.middleware import body_text
from scraper.downloadermiddlewares.githubauth import origin
from scraper.stores.base import StoreUnavailable, build_store

CONDITIONAL_META = "conditional"
"""``False`` in a request's meta: never send ``If-None-Match`` for it."""

_INCOMPLETE_RE = re.compile(r'"incomplete_results"\s*:\s*true')
INCOMPLETE_PEEK = 1024
"""GitHub writes ``incomplete_results`` before the items: the head of the body is enough."""


def incomplete_answer(response: Response) -> bool:
    """GitHub's search timed out and left results out of this answer."""
    return bool(_INCOMPLETE_RE.search(body_text(response, INCOMPLETE_PEEK)))


class ConditionalRequestMiddleware:
    def __init__(self, crawler: Crawler, api_url: str, identity: str) -> None:
        self.crawler = crawler
        self.api_origin = origin(api_url)
        self.identity = identity
        self._store: EtagStorage | None = None
        self._seen: dict[str, PageTag] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ConditionalRequestMiddleware:
        settings = crawler.settings
        if not settings.getbool("BUDGET_CONDITIONAL") or not settings.get("GITHUB_API_URL"):
            raise NotConfigured("BUDGET_CONDITIONAL is off, or no GITHUB_API_URL")
        middleware = cls(crawler, settings["GITHUB_API_URL"], settings_identity(settings))
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    @property
    def store(self) -> EtagStorage:
        # Opened on the first API request: a docs worker keeps no idle connection.
        if self._store is None:
            self._store = build_store(self.crawler, "ETAG_STORAGE")
        return self._store

    def _tag(self, url: str) -> PageTag | None:
        try:
            return self.store.get(self.identity, url)
        except StoreUnavailable:  # asked unconditionally: a full answer, never a wrong one
            return None

    def _applies(self, request: Request) -> bool:
        return (request.method == "GET" and origin(request.url) == self.api_origin
                and request.meta.get(CONDITIONAL_META) is not False)

    def process_request(self, request: Request) -> None:
        if not self._applies(request) or b"If-None-Match" in request.headers:
            return
        tag = self._tag(request.url)
        if tag:
            request.headers[b"If-None-Match"] = tag[0].encode("latin-1")

    def process_response(self, request: Request, response: Response) -> Response:
        if not self._applies(request):
            return response
        stats = self.crawler.stats
        assert stats is not None
        if response.status == 304:
            stats.inc_value("conditional/not_modified")
            tag = self._tag(request.url)
            if tag and tag[1] and b"Link" not in response.headers:
                response.headers[b"Link"] = tag[1].encode("latin-1")
        elif response.status == 200:
            etag = response.headers.get(b"ETag")
            if incomplete_answer(response):
                self._seen.pop(request.url, None)  # asked again; never answered with 304
            elif etag:
                link = response.headers.get(b"Link")
                self._seen[request.url] = (etag.decode("latin-1"),
                                           link.decode("latin-1") if link else None)
        return response

    def spider_closed(self, reason: str) -> None:
        if self._store is None:
            return
        if reason == "finished" and self._seen:
            with contextlib.suppress(StoreUnavailable):  # next round asks afresh
                self.store.remember(self.identity, self._seen)
        self.store.close()
