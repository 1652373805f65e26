"""``scrapy shell`` with the collector's config and no round bookkeeping (see project.py).

A URL is fetched, or the shell says in one line why not. Scrapy's own shell leaves ``response``
None without a word when the request is dropped (a spider closed by a 401 "Bad credentials"
even waits forever for it), and ends with a traceback when the download fails.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.commands.shell import Command as ScrapyShellCommand
from scrapy.exceptions import IgnoreRequest
from scrapy.shell import Shell
from scrapy.utils.spider import DefaultSpider, spidercls_for_request
from scrapy.utils.url import guess_scheme
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from scraper.commands.project import CollectorTool
from scraper.utils.outcome import FIRST_ERROR, failure_cause


def _waiting(request: Request) -> Deferred[Any] | None:
    """The shell's Deferred a request's answer would fire, while it has not fired."""
    waiting = getattr(request.errback, "__self__", None)
    return waiting if isinstance(waiting, Deferred) and not waiting.called else None


class CollectorShell(Shell):
    """Scrapy's shell, whose fetches end: answered, or failed with their cause said."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._asked: list[Request] = []
        self._closed: str | None = None
        self.crawler.signals.connect(self._scheduled, signal=signals.request_scheduled,
                                     weak=False)
        self.crawler.signals.connect(self._spider_closed, signal=signals.spider_closed,
                                     weak=False)

    def _scheduled(self, request: Request, spider: Spider) -> None:
        self._asked = [asked for asked in self._asked if _waiting(asked)] + [request]

    def _spider_closed(self, spider: Spider, reason: str) -> None:
        """A request the closed spider will never answer fails now, instead of being waited
        for: the shell's fetch hangs on its callback (scrapy.shell._request_deferred)."""
        self._closed = reason
        for request in self._asked:
            waiting = _waiting(request)
            if waiting is not None:
                waiting.errback(Failure(IgnoreRequest(f"the spider closed ({reason})")))
        self._asked.clear()

    def fetch(self, request_or_url: Request | str, spider: Spider | None = None,
              redirect: bool = True, **kwargs: Any) -> None:
        url = request_or_url.url if isinstance(request_or_url, Request) else request_or_url
        try:
            super().fetch(request_or_url, spider, redirect=redirect, **kwargs)
        except Exception as exc:  # a download that failed: the cause, not Scrapy's traceback
            self.populate_vars(None, None, self.spider)
            self._say(url, failure_cause(exc, url))
            return
        if self.vars.get("response") is None:
            self._say(url, self._why_no_response())

    def _why_no_response(self) -> str:
        stats = self.crawler.stats
        cause = stats.get_value(FIRST_ERROR) if stats is not None else None
        if cause:
            return str(cause)
        if self._closed:
            return f"the spider closed ({self._closed})"
        return "the request was dropped without an answer (the log says by what)"

    @staticmethod
    def _say(url: str, why: str) -> None:
        print(f"scrapy shell: no response from {url}: {why}", file=sys.stderr, flush=True)


class CollectorShellCommand(ScrapyShellCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        """Scrapy's own (scrapy.commands.shell), with CollectorShell for its Shell."""
        assert self.crawler_process is not None
        url = guess_scheme(args[0]) if args else None
        loader = self.crawler_process.spider_loader
        spidercls: type[Spider] = DefaultSpider
        if opts.spider:
            spidercls = loader.load(opts.spider)
        elif url:
            spidercls = spidercls_for_request(loader, Request(url), spidercls, log_multiple=True)
        crawler = self.crawler_process._create_crawler(spidercls)
        crawler._apply_settings()
        loop = None
        if crawler.settings.getbool("TWISTED_REACTOR_ENABLED"):
            self._init_with_reactor(crawler)
        else:
            self._init_without_reactor(crawler)
            loop = self._get_reactorless_loop()
        shell = CollectorShell(crawler, update_vars=self.update_vars, code=opts.code, loop=loop)
        shell.start(url=url, redirect=not opts.no_redirect)


class Command(CollectorTool, CollectorShellCommand):
    quiet_interrupt = False
