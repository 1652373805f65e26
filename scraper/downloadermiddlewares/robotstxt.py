"""Scrapy's RobotsTxtMiddleware, with every request that waits for robots.txt obeying it.

Scrapy 2.19's ``robot_parser`` makes the requests that arrive while a host's robots.txt is
being fetched await one shared Deferred through ``maybe_deferred_to_future``, i.e.
``Deferred.asFuture``, which *consumes* the result: the first waiter gets the parser, every
other waiter gets ``None`` — "no robots.txt", everything allowed. On one machine that hits only
the first burst of requests to a host (the start URLs); a distributed worker that joins a crawl
under way takes a whole batch of queued pages at once, disallowed ones included, and fetched
them. Here each waiter gets its own Deferred, fed from the shared one, which passes the parser
on untouched.

A robots.txt that cannot be read (too big, too slow, a reset) is Scrapy's case of "no
robots.txt": the site is crawled as if it had none (Scrapy's middleware lets every request go
when robots.txt cannot be downloaded). Scrapy logs that with a traceback, after RetryMiddleware's
own lines; here it is one WARNING line, the file is asked for once (no retries: the site's
pages wait for it) and read up to :data:`ROBOTSTXT_MAXSIZE`, the 500 KiB RFC 9309 asks a crawler
to parse at least.

A spider that asks for a host's robots.txt itself (the docs spider reads its ``Sitemap:``
lines) is answered with the copy fetched for the host's pages: robots.txt is downloaded once per
host and crawl.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.python import global_object_name
from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)

ROBOTSTXT_MAXSIZE = 500 * 1024


class SharedRobotsTxtMiddleware(RobotsTxtMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        # Each host's robots.txt as fetched: a spider that reads it too (docs' sitemap seeding,
        # for its Sitemap: lines) gets this copy, not a second download.
        self._fetched: dict[str, Response] = {}

    # Scrapy takes a downloader middleware's answer from any of its methods, a Response from
    # process_request included; upstream's signature only says it never gives one.
    async def process_request(  # type: ignore[override]
            self, request: Request, spider: Any = None) -> Response | None:
        await super().process_request(request)
        if request.meta.get("dont_obey_robotstxt"):
            return None
        url = urlparse_cached(request)
        fetched = self._fetched.get(url.netloc) if url.path == "/robots.txt" else None
        if fetched is not None and fetched.url == request.url:
            return fetched.replace(request=request)
        return None

    async def _parse_robots(self, response: Response, netloc: str, request: Request) -> None:
        self._fetched[netloc] = response
        await super()._parse_robots(response, netloc, request)

    async def robot_parser(self, request: Request) -> Any:
        netloc = urlparse_cached(request).netloc
        if netloc not in self._parsers:
            return await self._fetch(request, netloc)
        pending = self._parsers.get(netloc)
        if isinstance(pending, Deferred):
            waiter: Deferred[Any] = Deferred()

            def hand_on(result: Any) -> Any:
                waiter.callback(result)
                return result  # the next waiter (or nobody) still sees the parser

            pending.addBoth(hand_on)
            return await maybe_deferred_to_future(waiter)
        return await super().robot_parser(request)

    async def _fetch(self, request: Request, netloc: str) -> Any:
        self._parsers[netloc] = Deferred()
        url = urlparse_cached(request)
        robots = Request(f"{url.scheme}://{netloc}/robots.txt", priority=self.DOWNLOAD_PRIORITY,
                         callback=NO_CALLBACK,
                         meta={"dont_obey_robotstxt": True, "dont_retry": True,
                               "download_maxsize": ROBOTSTXT_MAXSIZE})
        engine = self.crawler.engine
        assert engine is not None
        try:
            response = await engine.download_async(robots)
            await self._parse_robots(response, netloc, request)
        except Exception as exc:  # unreadable: Scrapy's rule, as if there were none
            if not isinstance(exc, IgnoreRequest):
                reason = next(iter(str(exc).splitlines()), "") or type(exc).__name__
                logger.warning("robots.txt of %s cannot be read (%s: %s); the site is crawled "
                               "as if it had none", netloc, global_object_name(type(exc)),
                               reason[:200])
            self._robots_error(exc, netloc)
        self._stats.inc_value("robotstxt/request_count")
        return self._parsers[netloc]
