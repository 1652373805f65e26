"""What came of each request of a scheduled fetch, for the gap ledger
(:mod:`scraper.utils.ledger`).

Outermost of the downloader middlewares: it sees a request once before anything else (robots,
the budget, retries) and its final answer or the exception that ended it after everything else
(RetryMiddleware gave up, RedirectMiddleware followed the hops). It only classifies and sends
:data:`scraper.signals.fetch_sent` / :data:`scraper.signals.fetch_done`; the ledger extension
writes.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from scrapy.http import Response
from scrapy.utils.python import global_object_name
from twisted.internet import error as twisted_errors
from twisted.internet.defer import CancelledError
from twisted.web._newclient import ResponseNeverReceived

from scraper.signals import fetch_done, fetch_sent
from scraper.utils.diskspace import is_disk_full
from scraper.utils.ledger import DATA, FAILED, LEDGER_META, NOT_MODIFIED, SKIPPED
from scraper.utils.outcome import failure_cause

SENT_META = "ledger_sent"
"""Set on a request's first pass: its retries and redirect hops (copies of its meta) are the
same fetch."""

_CAUSES: tuple[tuple[tuple[type[BaseException], ...], str], ...] = (
    ((DownloadConnectionRefusedError, twisted_errors.ConnectionRefusedError), "refused"),
    ((DownloadTimeoutError, twisted_errors.TimeoutError, twisted_errors.TCPTimedOutError),
     "timeout"),
    ((CannotResolveHostError, twisted_errors.DNSLookupError), "dns"),
    ((ResponseNeverReceived, ResponseDataLossError, twisted_errors.ConnectionLost,
      twisted_errors.ConnectionDone), "connection lost"),
)


def response_outcome(status: int) -> tuple[str, str]:
    """(outcome, cause) of a final answer: 2xx data, 304 not modified, any other a failure
    named by its status."""
    if 200 <= status < 300:
        return DATA, ""
    if status == 304:
        return NOT_MODIFIED, ""
    return FAILED, f"HTTP {status}"


def exception_outcome(exc: BaseException) -> tuple[str, str]:
    """(outcome, cause) of the exception that ended a fetch: the cause a short class
    (``refused``, ``timeout``, ``dns``, ``robots``, ``connection lost``) so that rounds with
    the same fault collapse into one span; a full disk skipped the fetch, it did not fail."""
    if is_disk_full(exc):
        return SKIPPED, "disk full"
    if isinstance(exc, DownloadCancelledError | CancelledError):
        return SKIPPED, "round cut short"  # a download the closing round gave up
    if isinstance(exc, IgnoreRequest) and "robots.txt" in str(exc):
        return FAILED, "robots"
    for kinds, cause in _CAUSES:
        if isinstance(exc, kinds):
            return FAILED, cause
    return FAILED, global_object_name(type(exc))


class LedgerMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LedgerMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        if LEDGER_META in request.meta and not request.meta.get(SENT_META):
            request.meta[SENT_META] = True
            self.crawler.signals.send_catch_log(fetch_sent, request=request)

    def process_response(self, request: Request, response: Response) -> Response:
        if LEDGER_META in request.meta:
            outcome, cause = response_outcome(response.status)
            self._done(request, outcome, cause, "" if not cause else response.url)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        if LEDGER_META in request.meta:
            outcome, cause = exception_outcome(exception)
            self._done(request, outcome, cause, failure_cause(exception, request.url))

    def _done(self, request: Request, outcome: str, cause: str, detail: str) -> None:
        self.crawler.signals.send_catch_log(fetch_done, request=request, outcome=outcome,
                                            cause=cause, detail=detail)
