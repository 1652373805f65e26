"""The gap ledger's writer: every scheduled fetch of the round and its outcome
(``state/ledger/{day}/{spider}-{i}of{N}.jsonl``, format in :mod:`scraper.utils.ledger`).

At ``spider_opened`` the round's plan (the spider's :meth:`ledger_plan`: its shard's start
entries) is one line; each outcome the ledger middleware
(:mod:`scraper.downloadermiddlewares.ledger`) reports is a line as it happens, and so is a
spider's later verdict on an answer (a trending page that parsed to zero rows); at
``spider_closed`` every scheduled fetch with no outcome, or with a request still unsent, is
``skipped`` with the cause (the budget, a full disk, the round cut short), then a close line.
A worker killed mid-round writes no more: its unreported fetches read as ``silent``.

Not in the distributed mode (``COLLECTOR_DISTRIBUTED``): there a fetch one box plans may be
taken by another, which this per-worker file cannot tell; :mod:`scraper.cluster.ledger` keeps
the ledger in Redis instead.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings

from scraper.signals import fetch_done, fetch_judged, fetch_sent
from scraper.utils.diskspace import DISK_FULL_REASON
from scraper.utils.layout import DataLayout, worker_slug
from scraper.utils.ledger import (
    DETAIL_MAX,
    LEDGER_META,
    SKIPPED,
    append_line,
    close_quietly,
    ledger_file,
    open_ledger,
    prune_ledger,
    stamp_ms,
)

logger = logging.getLogger(__name__)

BUDGET_UNSENT = "github_budget/unsent_at_close"


def skip_cause(reason: str, stats: dict[str, Any]) -> tuple[str, str]:
    """(cause, detail) of the fetches a round closed without: the GitHub budget held them,
    the disk was full, the round was cut short (a stop, a timeout), or it finished without
    sending them."""
    if stats.get(BUDGET_UNSENT):
        return "budget", (f"{stats[BUDGET_UNSENT]} requests waited for GitHub's rate limit "
                          f"when the round closed ({reason})")
    if reason == DISK_FULL_REASON or stats.get("diskspace/full"):
        return "disk full", f"the round closed on a full disk ({reason})"
    if reason == "finished":
        return "not sent", "the round finished without sending it"
    return "round cut short", f"the round closed before it was answered ({reason})"


class FetchLedger:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.layout = DataLayout.from_settings(crawler.settings)
        self.round = stamp_ms()
        self.fd: int | None = None
        self.keys: list[str] = []
        self.unsent: dict[str, int] = {}  # key → its requests sent without an outcome yet
        self.reported: set[str] = set()
        self.written: set[tuple[str, str, str]] = set()
        self.failing = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FetchLedger:
        if not cls.enabled(crawler.settings):
            raise NotConfigured
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(extension.fetch_sent, signal=fetch_sent)
        crawler.signals.connect(extension.fetch_done, signal=fetch_done)
        crawler.signals.connect(extension.fetch_judged, signal=fetch_judged)
        return extension

    @classmethod
    def enabled(cls, settings: BaseSettings) -> bool:
        return settings.getbool("LEDGER_ENABLED") and not settings.getbool("COLLECTOR_DISTRIBUTED")

    def spider_opened(self, spider: Any) -> None:
        plan = getattr(spider, "ledger_plan", None)
        if plan is None:
            return  # not a collector spider: nothing scheduled to account for
        kind, self.keys = plan()
        slug = worker_slug(spider.name, spider.shard)
        prune_ledger(self.layout.state_dir, self.crawler.settings.getint("LEDGER_KEEP_DAYS"))
        try:
            self.fd = open_ledger(ledger_file(self.layout.state_dir, self.round[:10], slug))
        except OSError as exc:
            self._cannot(exc)
            return
        self.write({"t": "plan", "round": self.round, "spider": spider.name,
                    "shard": str(spider.shard), "pid": os.getpid(), "kind": kind,
                    "keys": self.keys})

    def fetch_sent(self, request: Request) -> None:
        key = request.meta[LEDGER_META]
        self.unsent[key] = self.unsent.get(key, 0) + 1

    def fetch_done(self, request: Request, outcome: str, cause: str, detail: str) -> None:
        key = request.meta[LEDGER_META]
        if self.unsent.get(key):
            self.unsent[key] -= 1
        self.reported.add(key)
        self.write_fetch(key, outcome, cause, detail)

    def fetch_judged(self, request: Request, outcome: str, cause: str, detail: str) -> None:
        if self.fd is not None and request.meta.get(LEDGER_META) in self.reported:
            self.write_fetch(request.meta[LEDGER_META], outcome, cause, detail)

    def spider_closed(self, reason: str) -> None:
        if self.fd is None:
            return
        stats = self.crawler.stats.get_stats() if self.crawler.stats is not None else {}
        cause, detail = skip_cause(reason, stats)
        for key in self.keys:
            if self.unsent.get(key) or key not in self.reported:
                self.write_fetch(key, SKIPPED, cause, detail)
        self.write({"t": "close", "round": self.round, "spider": self.spider_name,
                    "shard": self.shard, "reason": reason, "at": stamp_ms()})
        close_quietly(self.fd)
        self.fd = None

    @property
    def spider_name(self) -> str:
        spider = self.crawler.spider
        return spider.name if spider is not None else ""

    @property
    def shard(self) -> str:
        return str(getattr(self.crawler.spider, "shard", ""))

    def write_fetch(self, key: str, outcome: str, cause: str, detail: str) -> None:
        # A key's first line of each outcome and cause is all a reader uses: a search query's
        # 30 pages of data are one line.
        if (key, outcome, cause) in self.written:
            return
        self.written.add((key, outcome, cause))
        self.write({"t": "fetch", "round": self.round, "spider": self.spider_name,
                    "shard": self.shard, "key": key, "outcome": outcome, "cause": cause,
                    "detail": detail[:DETAIL_MAX], "at": stamp_ms()})

    def write(self, record: dict[str, Any]) -> None:
        if self.fd is None:
            return
        try:
            append_line(self.fd, record)
        except OSError as exc:
            self._cannot(exc)
        else:
            self.failing = False

    def _cannot(self, exc: OSError) -> None:
        # Said once: a full disk has its own line (DiskFullGuard), and the crawl goes on.
        if not self.failing:
            logger.warning("gap ledger: cannot write %s", exc)
        self.failing = True
