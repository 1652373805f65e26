"""Scrapy's RedirectMiddleware, refusing a redirect back to a URL of the same chain.

Scrapy stops an endless chain at ``REDIRECT_MAX_TIMES``, but a loop (A → B → A) ends in the
scheduler's duplicate filter, silently. Here the redirect that would revisit a URL of its own
chain fails the request with :class:`RedirectLoop` (stat ``redirect/loop``), and running out of
redirects with :class:`TooManyRedirects`; both reach the spider's errback, which logs one line.
"""

from __future__ import annotations

from scrapy import Request, Spider
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response


class RedirectLoop(IgnoreRequest):
    """The server redirected back to a URL it had already redirected from."""


class TooManyRedirects(IgnoreRequest):
    """More than ``REDIRECT_MAX_TIMES`` redirects in a row."""


class LoopSafeRedirectMiddleware(RedirectMiddleware):
    def process_response(self, request: Request, response: Response,
                         spider: Spider | None = None) -> Request | Response:
        try:
            result = super().process_response(request, response)
        except IgnoreRequest as exc:
            if str(exc) == "max redirections reached":
                self.crawler.stats.inc_value("redirect/max_reached")
                first = (request.meta.get("redirect_urls") or [request.url])[0]
                raise TooManyRedirects(
                    f"more than {self.max_redirect_times} redirects in a row from {first}"
                ) from None
            raise
        if isinstance(result, Request) and result is not request:
            chain = result.meta.get("redirect_urls", [])
            if result.url in chain:
                self.crawler.stats.inc_value("redirect/loop")
                raise RedirectLoop("redirect loop: " + " → ".join([*chain, result.url]))
        return result
