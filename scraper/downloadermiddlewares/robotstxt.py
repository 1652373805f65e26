"""Scrapy's RobotsTxtMiddleware, with every request that waits for robots.txt obeying it.

Scrapy 2.19's ``robot_parser`` makes the requests that arrive while a host's robots.txt is
being fetched await one shared Deferred through ``maybe_deferred_to_future``, i.e.
``Deferred.asFuture``, which *consumes* the result: the first waiter gets the parser, every
other waiter gets ``None`` — "no robots.txt", everything allowed. On one machine that hits only
the first burst of requests to a host (the start URLs); a distributed worker that joins a crawl
under way takes a whole batch of queued pages at once, disallowed ones included, and fetched
them. Here each waiter gets its own Deferred, fed from the shared one, which passes the parser
on untouched.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred


class SharedRobotsTxtMiddleware(RobotsTxtMiddleware):
    async def robot_parser(self, request: Request) -> Any:
        pending = self._parsers.get(urlparse_cached(request).netloc)
        if isinstance(pending, Deferred):
            waiter: Deferred[Any] = Deferred()

            def hand_on(result: Any) -> Any:
                waiter.callback(result)
                return result  # the next waiter (or nobody) still sees the parser

            pending.addBoth(hand_on)
            return await maybe_deferred_to_future(waiter)
        return await super().robot_parser(request)
