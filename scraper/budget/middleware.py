"""Spend GitHub's rate limits as one budget shared by every worker (see :mod:`scraper.budget`).

For a request to the API origin (``github.api_url``): book a slot in the shared budget and wait
for it without blocking the reactor, claim it, send; after the answer, sync the budget from the
``x-ratelimit-*`` headers. A rate-limit answer (403/429) pauses that budget for every worker, in
GitHub's order, and the request is sent again after the pause: returned to the scheduler here,
before RetryMiddleware sees it, so it is neither dropped nor counted as a failed try. Search
answers of 304 (see :mod:`.conditional`) cost nothing.
A 401 "Bad credentials" stops the worker with one error instead of retrying.

For a request to the web origin (``github.web_url``, the trending pages): one pace shared by
all workers (``github.web_min_interval``) and the same pauses on 429 or the "secondary rate
limit" page. Any other host (docs sites) is left to AutoThrottle.

Sits next to the downloader (only GitHubAuthMiddleware, which adds the token, is closer), so the
wait ends right before the request leaves and the raw answer, redirects included, is seen first.

The budget lives in the store ``BUDGET_STORAGE`` names (:mod:`scraper.stores.base`): the
machine's SQLite file, or Redis for a cluster. While the store is away, requests to GitHub wait
(never sent unbudgeted); a ticket booked before a failure stays booked until it lapses (the
budget is under-used a little, never over-spent).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    IgnoreRequest,
    NotConfigured,
)
from scrapy.http import Response
from scrapy.settings import BaseSettings
from scrapy.utils.asyncio import sleep
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.error import ConnectError

from scraper.budget.limits import (
    RateHeaders,
    http_date,
    identity_label,
    limit_kind,
    retry_after_seconds,
    settings_identity,
)
from scraper.budget.store import BucketKey, BucketSpec, BudgetStorage, Ticket
from scraper.config.collector import RateLimit
from scraper.downloadermiddlewares.githubauth import origin
from scraper.stores.base import StoreUnavailable, build_store
from scraper.utils.engine import engine_closing
from scraper.utils.outcome import note_error

logger = logging.getLogger(__name__)

TICKET_META = "github_budget_ticket"
PROBE_META = "github_budget_probe"
SLOT_META = "github_budget_slot"
LIMITED_META = "github_budget_limited"
API_SLOT = "github-api"
WEB_SLOT = "github-web"
PROBE_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
SLEEP_CHUNK = 1.0
"""Long waits are cut into chunks so a closing spider is never held up by a pause."""
TEXT_PEEK = 64 * 1024
"""Bytes of a 403/429 body read to tell a rate limit from a permission error."""
DECODE_MAX = 1024 * 1024
"""A compressed 403/429 body that inflates past this is not a GitHub error page."""
NEVER_SENT = (CannotResolveHostError, DownloadConnectionRefusedError, ConnectError)
"""Failures before a connection opened: GitHub never saw the request, so it costs nothing."""


@dataclass(frozen=True, slots=True)
class Route:
    key: BucketKey
    api: bool


def body_text(response: Response, limit: int = TEXT_PEEK) -> str:
    """The start of the body as text. This middleware sees answers before
    HttpCompressionMiddleware does, and GitHub compresses its error pages too: decoded here with
    that middleware's own decoder, bounded."""
    body = response.body
    raw = response.headers.get(b"Content-Encoding") or b""
    for encoding in reversed([e.strip().lower() for e in raw.split(b",")]):
        if encoding in (b"", b"identity"):
            continue
        try:
            body = HttpCompressionMiddleware._decode(body, encoding, DECODE_MAX)
        except Exception:  # unknown, truncated or too large: judge by status and headers alone
            return ""
    return body[:limit].decode("utf-8", "replace")


def rate_limit_resources(body: bytes, server_now: float | None = None
                         ) -> dict[str, RateHeaders]:
    """``GET /rate_limit``'s ``resources`` object as one RateHeaders per resource; values that
    are not counts or times are left out (named in ``bad``), as in headers. ValueError when the
    body is not such an object."""
    data = json.loads(body)
    resources = data.get("resources") if isinstance(data, dict) else None
    if not isinstance(resources, dict):
        raise ValueError("no 'resources' object")
    return {str(name): RateHeaders.from_values(entry, str(name), server_now)
            for name, entry in resources.items() if isinstance(entry, dict)}


@dataclass(frozen=True, slots=True)
class GitHubEndpoints:
    """What the budget needs to know of GitHub, from the ``GITHUB_*`` settings."""

    api_url: str
    web_url: str
    token_env: str
    identity: str
    web_min_interval: float
    limits: Mapping[str, RateLimit]

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> GitHubEndpoints:
        return cls(api_url=settings["GITHUB_API_URL"], web_url=settings["GITHUB_WEB_URL"],
                   token_env=settings["GITHUB_TOKEN_ENV"], identity=settings_identity(settings),
                   web_min_interval=settings.getfloat("GITHUB_WEB_MIN_INTERVAL"),
                   limits=settings["GITHUB_RATE_LIMITS"])


class BudgetMiddleware:
    def __init__(self, crawler: Crawler, github: GitHubEndpoints,
                 open_store: Callable[[], BudgetStorage], *, probe: bool = True,
                 clock: Callable[[], float] = time.time) -> None:
        self.crawler = crawler
        self._open_store = open_store
        self._store: BudgetStorage | None = None
        self.clock = clock
        self.probe_enabled = probe
        self.token_env = github.token_env
        self.api_origin = origin(github.api_url)
        self.api_prefix = urlsplit(github.api_url).path.rstrip("/")
        self.rate_limit_url = f"{github.api_url.rstrip('/')}/rate_limit"
        self.web_origin = origin(github.web_url)
        self.identity = github.identity
        self.web_key = BucketKey(self._host_label(self.web_origin), "web")
        self._specs = {BucketKey(self.identity, resource): BucketSpec(guess.limit, guess.window,
                                                                      probe=probe)
                       for resource, guess in github.limits.items()}
        self._specs[self.web_key] = BucketSpec(None, github.web_min_interval)
        self._credentials_rejected = False
        self._warned: set[tuple[str, str, bool]] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BudgetMiddleware:
        settings = crawler.settings
        if not settings.getbool("BUDGET_ENABLED") or not settings.get("GITHUB_API_URL"):
            raise NotConfigured("BUDGET_ENABLED is off, or no GITHUB_API_URL")
        middleware = cls(crawler, GitHubEndpoints.from_settings(settings),
                         lambda: build_store(crawler, "BUDGET_STORAGE"),
                         probe=settings.getbool("BUDGET_PROBE"))
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    @property
    def store(self) -> BudgetStorage:
        """The budget, opened on the first request to GitHub: a worker that never talks to
        GitHub (the docs spider) keeps no idle SQLite connection and its page cache, which 20
        workers would each hold (benchmarks/README.md has the figure)."""
        if self._store is None:
            store = self._open_store()
            for key, spec in self._specs.items():
                store.define(key, spec)
            self._store = store
        return self._store

    def spider_closed(self, reason: str) -> None:
        if self._store is None:
            return
        # With the store away, this process's tickets lapse with it (Redis: its process key).
        with contextlib.suppress(StoreUnavailable):
            self.store.release_process()
        self.store.close()

    @staticmethod
    def _host_label(parts: tuple[str, str, int | None]) -> str:
        scheme, host, port = parts
        default = {"http": 80, "https": 443}.get(scheme)
        return host if port in (None, default) else f"{host}:{port}"

    def __repr__(self) -> str:  # the identity is a hash; the label shows only its last digits
        return f"<BudgetMiddleware {identity_label(self.identity)}>"

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
        while True:
            if (self.route(request) is not None and not self.store.up
                    and not await self.store.wait_until_up(self._stopped)):
                return self._unsent(request)
            try:
                return await self._book(request)
            except StoreUnavailable:
                continue  # a ticket booked before the failure stays booked until it lapses

    async def _book(self, request: Request) -> Request | None:
        route = self.route(request)
        self._use_slot(request, route)
        if route is None or request.meta.get(PROBE_META):
            return None
        if self._stopped():
            return self._unsent(request)
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
            # Seconds, not a count: Scrapy's inc_value is typed for ints.
            total = stats.get_value("github_budget/wait_seconds", 0.0) + round(waited, 3)
            stats.set_value("github_budget/wait_seconds", total)
        request.meta[TICKET_META] = ticket
        return None

    async def _sleep_until(self, ticket: Ticket) -> bool:
        """Sleep until the ticket's slot; False (slot given back) if the spider is closing."""
        while True:
            if self._stopped():
                self.store.cancel(ticket)
                return False
            left = self.store.slot_of(ticket) - self.store.clock()
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

    def _stopped(self) -> bool:
        return self._credentials_rejected or engine_closing(self.crawler)

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
        no_api = False
        try:
            response = await engine.download_async(request)
            if response.status == 200:
                try:
                    resources = rate_limit_resources(response.body,
                                                     http_date(self._header(response)("date")))
                except ValueError as exc:  # a page in its place (a proxy's): no such endpoint
                    no_api = True
                    self._no_rate_limit_api(f"answered 200 with no rate limits ({exc})")
                for rate in (resources or {}).values():
                    self._warn_bad(rate, request.url)
            elif response.status == 404:  # GitHub Enterprise Server with rate limiting off
                no_api = True
                self._no_rate_limit_api("answered 404")
            else:
                logger.debug("GitHub budget: /rate_limit answered %d", response.status)
        except IgnoreRequest:
            pass
        except Exception as exc:  # no probe: the configured first guess stands in until headers
            logger.debug("GitHub budget: /rate_limit failed: %s: %s", type(exc).__name__, exc)
        self.store.probe_result(identity, resources, no_api=no_api)

    def _no_rate_limit_api(self, what: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("github_budget/no_rate_limit_api")
        logger.info("GitHub budget: %s %s: no rate limit API; the budget keeps no limit until "
                    "an answer's x-ratelimit-* headers give one", self.rate_limit_url, what)

    # --- after the answer ---------------------------------------------------------------------

    def process_response(self, request: Request, response: Response) -> Request | Response:
        try:
            return self._settle(request, response)
        except StoreUnavailable:
            # The ticket stays "in flight" in the store until its lease ends (counted as spent).
            if response.status in (403, 429):
                rate = RateHeaders.parse(self._header(response))
                retry_after = retry_after_seconds(self._header(response)("retry-after"))
                if limit_kind(response.status, rate, retry_after, body_text(response)):
                    retry = request.replace(dont_filter=True)  # asked again once it is back
                    retry.meta.pop(TICKET_META, None)
                    return retry
            return response

    def _settle(self, request: Request, response: Response) -> Request | Response:
        ticket: Ticket | None = request.meta.pop(TICKET_META, None)
        route = self.route(request)
        if route is None:
            return response
        rate = RateHeaders.parse(self._header(response)) if route.api else RateHeaders()
        self._warn_bad(rate, request.url)
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
        # A 304 (a conditional request's "unchanged") costs nothing on GitHub.
        self.store.complete(ticket, key, rate, counted=response.status != 304,
                            success=200 <= response.status < 400)
        return response

    def _warn_bad(self, rate: RateHeaders, url: str) -> None:
        """One WARNING per kind of unusable header and endpoint (per worker): the value is
        ignored or clamped, the answer kept."""
        problems = [(name, f"{value!r} is not a count or time") for name, value in rate.bad]
        reset_in = rate.reset_in(time.time())
        if reset_in is not None and reset_in > self.store.max_wait:
            when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(rate.reset or 0))
            problems.append(("x-ratelimit-reset", f"{when} is farther away than BUDGET_MAX_WAIT "
                             "(no window is longer): ignored with the answer's remaining count, "
                             "and the budget asks /rate_limit before it waits"))
        for name, problem in problems:
            seen = (urlsplit(url).path, name, problem.endswith("waits"))
            if seen not in self._warned:
                self._warned.add(seen)
                self.crawler.stats.inc_value("github_budget/bad_headers")
                logger.warning("GitHub budget: %s: %s (at %s); the answer kept", name, problem,
                               url)

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
        wait = max(0.0, result.until - self.store.clock())
        message = ("%s %s budget (%s) paused for all workers until %s (%.0fs): %s; "
                   "requests are sent again after it")
        args: tuple[object, ...] = (
            where, key.resource, identity_label(key.identity),
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() + wait)), wait,
            result.reason)
        if wait <= 0:
            message = "%s %s budget (%s): %s"
            args = (where, key.resource, identity_label(key.identity), result.reason)
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
        if self.crawler.stats is not None:
            note_error(self.crawler.stats, f"GitHub answered 401 Bad credentials for the token "
                                           f"in ${self.token_env}")
        logger.error("GitHub answered 401 Bad credentials for the token in $%s "
                     "(%s): stopping this %s worker; set a valid token in $%s, or unset it to "
                     "run anonymously", self.token_env, identity_label(self.identity), name,
                     self.token_env)
        if engine is not None and spider is not None:
            deferred_from_coro(engine.close_spider_async(reason="github_bad_credentials"))

    def process_exception(self, request: Request, exception: BaseException) -> None:
        ticket: Ticket | None = request.meta.pop(TICKET_META, None)
        if ticket is not None:
            # No answer. A connection that never opened (DNS, refused, connect timeout) never
            # reached GitHub, so it costs nothing; anything later may have been counted.
            with contextlib.suppress(StoreUnavailable):  # then its lease ends: spent
                self.store.complete(ticket, ticket.key, RateHeaders(), success=False,
                                    counted=not isinstance(exception, NEVER_SENT))
