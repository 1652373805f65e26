"""Spend GitHub's rate limits as one budget shared by every worker (see :mod:`scraper.budget`).

For a request to the API origin (``github.api_url``): book a slot in the shared budget and wait
for it without blocking the reactor, claim it, send; after the answer, sync the budget from the
``x-ratelimit-*`` headers. A rate-limit answer (403/429) pauses that budget for every worker, in
GitHub's order, and the request is sent again after the pause: returned to the scheduler here,
before RetryMiddleware sees it, so it is neither dropped nor counted as a failed try. Search
pages are asked conditionally (``If-None-Match`` with the ETag last seen); a 304 costs nothing.
A 401 "Bad credentials" stops the worker with one error instead of retrying.

For a request to the web origin (``github.web_url``, the trending pages): one pace shared by
all workers (``github.web_min_interval``) and the same pauses on 429 or the "secondary rate
limit" page. Any other host (docs sites) is left to AutoThrottle.

Sits next to the downloader (only GitHubAuthMiddleware, which adds the token, is closer), so the
wait ends right before the request leaves and the raw answer, redirects included, is seen first.
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.settings import BaseSettings
from scrapy.utils.asyncio import sleep
from scrapy.utils.defer import deferred_from_coro

from scraper.budget.limits import (
    RateHeaders,
    identity_for_token,
    identity_label,
    limit_kind,
    retry_after_seconds,
)
from scraper.budget.store import BucketKey, BucketSpec, BudgetStore, Ticket
from scraper.config import GitHubConfig, load_config
from scraper.downloadermiddlewares.githubauth import origin
from scraper.layout import DataLayout

logger = logging.getLogger(__name__)

TICKET_META = "github_budget_ticket"
PROBE_META = "github_budget_probe"
SLOT_META = "github_budget_slot"
LIMITED_META = "github_budget_limited"
CONDITIONAL_META = "github_budget_conditional"  # False on a request: never send If-None-Match
API_SLOT = "github-api"
WEB_SLOT = "github-web"
PROBE_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
SLEEP_CHUNK = 1.0
"""Long waits are cut into chunks so a closing spider is never held up by a pause."""
TEXT_PEEK = 64 * 1024
"""Bytes of a 403/429 body read to tell a rate limit from a permission error."""


@dataclass(frozen=True, slots=True)
class Route:
    key: BucketKey
    api: bool


def body_text(response: Response, limit: int = TEXT_PEEK) -> str:
    """The start of the body as text, decoded here because this middleware runs before
    HttpCompressionMiddleware: GitHub compresses its error pages too."""
    body = response.body[: limit * 8]
    raw = response.headers.get(b"Content-Encoding") or b""
    for encoding in reversed([e.strip().lower() for e in raw.decode("latin-1").split(",")]):
        try:
            if encoding in ("gzip", "x-gzip"):
                body = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body, limit)
            elif encoding == "deflate":
                body = _inflate(body, limit)
            elif encoding == "br":
                import brotli  # an optional dependency of Scrapy's own decompression

                body = brotli.decompress(body)[:limit]
            elif encoding not in ("", "identity"):
                return ""
        except Exception:  # a truncated or odd body: judge by status and headers alone
            return ""
    return body[:limit].decode("utf-8", "replace")


def _inflate(body: bytes, limit: int) -> bytes:
    try:
        return zlib.decompressobj().decompress(body, limit)
    except zlib.error:  # raw deflate, as some servers send it
        return zlib.decompressobj(-zlib.MAX_WBITS).decompress(body, limit)


def rate_limit_resources(body: bytes) -> dict[str, RateHeaders]:
    """``GET /rate_limit``'s ``resources`` object as one RateHeaders per resource."""
    data = json.loads(body)
    out = {}
    for name, entry in (data.get("resources") or {}).items():
        if isinstance(entry, dict):
            out[name] = RateHeaders(limit=entry.get("limit"), remaining=entry.get("remaining"),
                                    reset=float(entry["reset"]) if "reset" in entry else None,
                                    used=entry.get("used"), resource=name)
    return out


class GitHubBudgetMiddleware:
    def __init__(self, crawler: Crawler, github: GitHubConfig,
                 open_store: Callable[[], BudgetStore], *, conditional: bool = True,
                 probe: bool = True, clock: Callable[[], float] = time.time) -> None:
        self.crawler = crawler
        self._open_store = open_store
        self._store: BudgetStore | None = None
        self.clock = clock
        self.conditional = conditional
        self.probe_enabled = probe
        self.token_env = github.token_env
        self.api_origin = origin(github.api_url)
        self.api_prefix = urlsplit(github.api_url).path.rstrip("/")
        self.rate_limit_url = f"{github.api_url.rstrip('/')}/rate_limit"
        self.web_origin = origin(github.web_url)
        self.identity = identity_for_token(github.token())
        self.web_key = BucketKey(self._host_label(self.web_origin), "web")
        self._specs = {BucketKey(self.identity, resource): BucketSpec(guess.limit, guess.window,
                                                                      probe=probe)
                       for resource, guess in github.first_guess_limits().items()}
        self._specs[self.web_key] = BucketSpec(None, github.web_min_interval)
        self._credentials_rejected = False
        self._etags_seen: dict[str, tuple[str, str | None]] = {}  # url → (etag, link)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GitHubBudgetMiddleware:
        settings = crawler.settings
        if not settings.getbool("GITHUB_BUDGET_ENABLED", True):
            raise NotConfigured("GITHUB_BUDGET_ENABLED is off")
        github = load_config(settings.get("COLLECTOR_CONFIG")).github
        middleware = cls(crawler, github, lambda: cls.open_store(settings),
                         conditional=settings.getbool("GITHUB_BUDGET_CONDITIONAL", True),
                         probe=settings.getbool("GITHUB_BUDGET_PROBE", True))
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    @classmethod
    def store_options(cls, settings: BaseSettings) -> dict[str, float]:
        return {
            "reset_guard": settings.getfloat("GITHUB_BUDGET_RESET_GUARD", 0.5),
            "min_interval": settings.getfloat("GITHUB_BUDGET_MIN_INTERVAL", 0.05),
            "backoff_start": settings.getfloat("GITHUB_BUDGET_BACKOFF_START", 60.0),
            "backoff_max": settings.getfloat("GITHUB_BUDGET_BACKOFF_MAX", 3600.0),
        }

    @classmethod
    def open_store(cls, settings: BaseSettings) -> BudgetStore:
        """The machine's budget file; the distributed mode overrides this with Redis."""
        return BudgetStore(DataLayout(settings.get("COLLECTOR_DATA_DIR", "data")).budget_db,
                           **cls.store_options(settings))

    @property
    def store(self) -> BudgetStore:
        """The budget, opened on the first request to GitHub: a worker that never talks to
        GitHub (the docs spider) keeps no idle connection (measured: a docs worker's USS 24.7 MB
        after 25.2, ``python -m benchmarks.memory --phases runner --workers 6``)."""
        if self._store is None:
            store = self._open_store()
            for key, spec in self._specs.items():
                store.define(key, spec)
            self._store = store
        return self._store

    def spider_closed(self, reason: str) -> None:
        if self._store is None:
            return
        # A page's ETag means "its items are collected": only a round that finished made sure
        # of that for every page it saw. After a cut-short round every page is asked afresh.
        if reason == "finished" and self._etags_seen:
            self.store.remember_etags(self.identity, self._etags_seen)
        self.store.release_process()
        self.store.close()

    @staticmethod
    def _host_label(parts: tuple[str, str, int | None]) -> str:
        scheme, host, port = parts
        default = {"http": 80, "https": 443}.get(scheme)
        return host if port in (None, default) else f"{host}:{port}"

    def __repr__(self) -> str:  # the identity is a hash; the label shows only its last digits
        return f"<GitHubBudgetMiddleware {identity_label(self.identity)}>"

    # --- which budget a request draws on ----------------------------------------------------

    def route(self, request: Request) -> Route | None:
        parts = urlsplit(request.url)
        where = origin(request.url)
        if where == self.api_origin and parts.path.startswith(self.api_prefix):
            path = parts.path[len(self.api_prefix):]
            resource = "search" if path.startswith("/search/") else "core"
            return Route(BucketKey(self.identity, resource), api=True)
        if where == self.web_origin:
            return Route(self.web_key, api=False)
        return None

    def _answer_key(self, route: Route, rate: RateHeaders) -> BucketKey:
        """The bucket an answer's headers speak for: GitHub names it in x-ratelimit-resource."""
        if route.api and rate.resource and rate.resource != route.key.resource:
            return BucketKey(self.identity, rate.resource)
        return route.key

    @staticmethod
    def _use_slot(request: Request, route: Route | None) -> None:
        # GitHub's hosts are paced by the budget, so their downloader slots get no delay of
        # their own (DOWNLOAD_SLOTS) and AutoThrottle keeps off them; a request redirected to
        # another host loses both again.
        if route is not None:
            if "download_slot" not in request.meta or request.meta.get(SLOT_META):
                request.meta["download_slot"] = API_SLOT if route.api else WEB_SLOT
                request.meta["autothrottle_dont_adjust_delay"] = True
                request.meta[SLOT_META] = True
        elif request.meta.pop(SLOT_META, False):
            request.meta.pop("download_slot", None)
            request.meta.pop("autothrottle_dont_adjust_delay", None)

    # --- before sending -----------------------------------------------------------------------

    async def process_request(self, request: Request) -> Request | None:
        route = self.route(request)
        self._use_slot(request, route)
        if route is None or request.meta.get(PROBE_META):
            return None
        if self._closing():
            return self._unsent(request)
        if route.api:
            self._add_etag(request)
        stats = self.crawler.stats
        assert stats is not None
        started = self.clock()
        ticket = self.store.reserve(route.key)
        while True:
            if not await self._sleep_until(ticket):
                return self._unsent(request)
            claim = self.store.claim(ticket)
            if claim.go:
                break
            if claim.probe:
                await self._probe(route.key.identity)
        waited = self.clock() - started
        if waited > 0.01:
            stats.inc_value("github_budget/waits")
            stats.inc_value("github_budget/wait_seconds", round(waited, 3))
        request.meta[TICKET_META] = ticket
        return None

    async def _sleep_until(self, ticket: Ticket) -> bool:
        """Sleep until the ticket's slot; False (slot given back) if the spider is closing."""
        while True:
            if self._closing():
                self.store.cancel(ticket)
                return False
            left = ticket.slot_at - self.clock()
            if left <= 0:
                return True
            await sleep(min(left, SLEEP_CHUNK))

    def _unsent(self, request: Request) -> Request:
        # Back to the scheduler rather than raising IgnoreRequest: the spider is closing, so
        # it is simply not crawled (as any queued request), and no errback reports a failure.
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value("github_budget/unsent_at_close")
        return request.replace(dont_filter=True)

    def _closing(self) -> bool:
        engine = self.crawler.engine
        if engine is None or self._credentials_rejected:
            return True
        # No public flag says "closing" for a close that did not go through engine.stop (a
        # CloseSpider, a close_spider_async call): read the engine slot's, defensively.
        slot = getattr(engine, "_slot", None)
        return not engine.running or getattr(slot, "closing", None) is not None

    def _add_etag(self, request: Request) -> None:
        if (not self.conditional or request.method != "GET"
                or request.meta.get(CONDITIONAL_META) is False
                or b"If-None-Match" in request.headers):
            return
        etag = self.store.etag(self.identity, request.url)
        if etag:
            request.headers[b"If-None-Match"] = etag.encode("latin-1")

    async def _probe(self, identity: str) -> None:
        """Ask ``GET /rate_limit`` (free on GitHub) for the truth before the first request."""
        engine = self.crawler.engine
        assert engine is not None and self.crawler.stats is not None
        self.crawler.stats.inc_value("github_budget/probes")
        # The probe is awaited inside another request's process_request: nothing on its way
        # may wait for that request. RobotsTxtMiddleware would (robots.txt for the API host is
        # itself a request waiting for this probe), so the probe skips robots.txt: it is a
        # machine-readable status endpoint, not a page.
        request = Request(self.rate_limit_url, headers=PROBE_HEADERS, dont_filter=True,
                          meta={PROBE_META: True, "dont_retry": True,
                                "handle_httpstatus_all": True, "dont_redirect": True,
                                "dont_obey_robotstxt": True})
        resources = None
        try:
            response = await engine.download_async(request)
            if response.status == 200:
                resources = rate_limit_resources(response.body)
            else:
                logger.debug("GitHub budget: /rate_limit answered %d", response.status)
        except IgnoreRequest:
            pass
        except Exception as exc:  # no probe: the configured first guess stands in until headers
            logger.debug("GitHub budget: /rate_limit failed: %s: %s", type(exc).__name__, exc)
        self.store.probe_result(identity, resources)

    # --- after the answer ---------------------------------------------------------------------

    def process_response(self, request: Request, response: Response) -> Request | Response:
        ticket: Ticket | None = request.meta.pop(TICKET_META, None)
        route = self.route(request)
        if route is None:
            if ticket is not None:  # cannot happen: a ticket is only taken for a routed URL
                self.store.complete(ticket, ticket.key, RateHeaders(), success=False)
            return response
        rate = RateHeaders.parse(self._header(response)) if route.api else RateHeaders()
        if route.api and response.status == 401:
            if ticket is not None:
                self.store.complete(ticket, route.key, rate, counted=False, success=False)
            self._reject_credentials(request)
            if request.meta.get(PROBE_META):
                return response  # to the probe, which waits for it (engine.download_async)
            return self._unsent(request)  # the spider is closing: one error line, no retry
        if request.meta.get(PROBE_META):
            return response
        retry_after = retry_after_seconds(self._header(response)("retry-after"))
        kind = None
        if response.status in (403, 429):
            kind = limit_kind(response.status, rate, retry_after, body_text(response))
        key = self._answer_key(route, rate)
        if kind is not None:
            return self._limited(request, response, ticket, key, rate, kind, retry_after)
        not_modified = response.status == 304
        self.store.complete(ticket, key, rate, counted=not not_modified,
                            success=200 <= response.status < 400)
        stats = self.crawler.stats
        assert stats is not None
        if not_modified:
            stats.inc_value("github_budget/not_modified")
            # GitHub's 304 has no body and may lack Link: hand the spider the one remembered
            # with the ETag, so paging goes on to pages that may have changed.
            link = self.store.etag_link(self.identity, request.url)
            if link and b"Link" not in response.headers:
                response.headers[b"Link"] = link.encode("latin-1")
        elif route.api and response.status == 200 and self.conditional:
            etag = response.headers.get(b"ETag")
            if etag and request.method == "GET":
                link = response.headers.get(b"Link")
                self._etags_seen[request.url] = (etag.decode("latin-1"),
                                                 link.decode("latin-1") if link else None)
        return response

    @staticmethod
    def _header(response: Response) -> Callable[[str], str | None]:
        def get(name: str) -> str | None:
            value = response.headers.get(name)
            return value.decode("latin-1") if value is not None else None

        return get

    def _limited(self, request: Request, response: Response, ticket: Ticket | None,
                 key: BucketKey, rate: RateHeaders, kind: str,
                 retry_after: float | None) -> Request:
        result = self.store.limited(ticket, key, rate, kind, retry_after)
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value(f"github_budget/limited/{kind}")
        stats.inc_value("github_budget/retried")
        where = "GitHub API" if key.resource != "web" else "GitHub web pages"
        wait = max(0.0, result.until - self.clock())
        message = ("%s %s budget (%s) paused for all workers until %s (%.0fs): %s; "
                   "requests are sent again after it")
        args = (where, key.resource, identity_label(key.identity),
                time.strftime("%H:%M:%S", time.localtime(result.until)), wait, result.reason)
        # The first answer of an episode is logged; the others (in flight at the same
        # moment, or in other workers) knew of the pause already.
        logger.log(logging.WARNING if result.new else logging.DEBUG, message, *args)
        retry = request.replace(dont_filter=True)
        retry.meta[LIMITED_META] = request.meta.get(LIMITED_META, 0) + 1
        retry.meta.pop(TICKET_META, None)
        return retry

    def _reject_credentials(self, request: Request) -> None:
        if self._credentials_rejected:
            return
        self._credentials_rejected = True
        engine, spider = self.crawler.engine, self.crawler.spider
        name = spider.name if spider is not None else "this"
        logger.error("GitHub answered 401 Bad credentials for the token in $%s "
                     "(%s): stopping this %s worker; set a valid token in $%s, or unset it to "
                     "run anonymously", self.token_env, identity_label(self.identity), name,
                     self.token_env)
        if engine is not None and spider is not None:
            deferred_from_coro(engine.close_spider_async(reason="github_bad_credentials"))

    def process_exception(self, request: Request, exception: BaseException) -> None:
        ticket: Ticket | None = request.meta.pop(TICKET_META, None)
        if ticket is not None:
            # No answer: the request may still have been counted, so it costs one.
            self.store.complete(ticket, ticket.key, RateHeaders(), success=False)
