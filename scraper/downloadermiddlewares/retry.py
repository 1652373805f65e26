"""Scrapy's RetryMiddleware with exponential backoff between the attempts.

Scrapy re-queues a failed request at once, so a server in a 5xx storm (or dropping connections)
gets ``RETRY_TIMES + 1`` requests within milliseconds. Here retry k (1-based) first waits
``RETRY_BACKOFF_BASE × 2^(k-1)`` seconds, at most ``RETRY_BACKOFF_MAX``; the wait holds one of
the ``CONCURRENT_REQUESTS``, nothing else. What is retried and how giving up looks are Scrapy's:
stats ``retry/count``, ``retry/max_reached`` and one ``Gave up retrying …`` ERROR line. A request
given up on is marked with meta ``GAVE_UP``, so the spider's errback doesn't log it twice.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request, Spider
from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.http import Response
from scrapy.settings import BaseSettings
from scrapy.utils.asyncio import sleep

GAVE_UP = "retry_gave_up"
"""Request meta key: retries ran out and Scrapy logged it."""


class BackoffRetryMiddleware(RetryMiddleware):
    def __init__(self, settings: BaseSettings) -> None:
        super().__init__(settings)
        self.backoff_base = settings.getfloat("RETRY_BACKOFF_BASE", 1.0)
        self.backoff_max = settings.getfloat("RETRY_BACKOFF_MAX", 10.0)

    def backoff(self, retry_times: int) -> float:
        return min(self.backoff_max, self.backoff_base * 2 ** max(0, retry_times - 1))

    # Coroutines, which Scrapy awaits from any downloader middleware method: the retry waits
    # its backoff without holding the reactor. Upstream's are plain methods.
    async def process_response(  # type: ignore[override]
            self, request: Request, response: Response,
            spider: Spider | None = None) -> Request | Response:
        result = super().process_response(request, response)
        if result is response:
            if (response.status in self.retry_http_codes
                    and not request.meta.get("dont_retry", False)):
                request.meta[GAVE_UP] = True
            return response
        return await self._wait(result)

    async def process_exception(  # type: ignore[override]
            self, request: Request, exception: Exception, spider: Spider | None = None) -> Any:
        result = super().process_exception(request, exception)
        if result is None:
            if (isinstance(exception, self.exceptions_to_retry)
                    and not request.meta.get("dont_retry", False)):
                request.meta[GAVE_UP] = True
            return None
        return await self._wait(result)

    async def _wait(self, result: Any) -> Any:
        if isinstance(result, Request):
            delay = self.backoff(result.meta.get("retry_times", 1))
            if delay > 0:
                await sleep(delay)
        return result
