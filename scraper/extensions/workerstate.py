"""A worker's live state for the runner's ``status``: ``state/workers/{spider}-{i}of{N}.json``.

Written every ``WORKER_STATE_INTERVAL`` seconds and at close as a
:class:`scraper.utils.statefile.WorkerRecord` (atomic replace: a reader never sees half a
file). Holds Scrapy's own stats (items, pages, errors), the process's memory (USS/PSS), the last
error logged and the round's outcome (:mod:`scraper.utils.outcome`), the same whether the spider
runs by hand or under the runner.

Each list's freshness (when its latest data came, :mod:`scraper.extensions.listtally`) is
carried from round to round the same way, and a round that ended normally with data is compared
with the spider-shard's recent rounds (:mod:`scraper.utils.roundhistory`): one WARNING when a
round turns unusual, one INFO line when the rounds are usual again, and ``unusual`` in the file
while it lasts.

Two counters outlive the round: ``items_total`` and ``failed_rounds`` (rounds in a row that sent
requests and got no answer with data) start from the previous round's file, so they survive a
runner restart and a worker killed mid-round (its last periodic write holds them).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any

import psutil
import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Request, Response
from twisted.internet import task

from scraper.exceptions import DuplicateItem
from scraper.extensions.listtally import ListTally
from scraper.trending.drift import DRIFT_LISTINGS, DRIFT_REASON
from scraper.utils.layout import DataLayout
from scraper.utils.outcome import (
    EMPTY_LISTING_URL,
    EMPTY_LISTINGS,
    FIRST_ERROR,
    ok_answers,
    response_classes,
    robots_requests,
)
from scraper.utils.roundhistory import RoundFigures, read_history, unusual, write_history
from scraper.utils.sharding import sharded_spider
from scraper.utils.statefile import WorkerRecord, read_worker, write_worker

MB = 1024 * 1024
logger = logging.getLogger(__name__)


class LastErrorHandler(logging.Handler):
    """Remembers the last ERROR-level message, for ``status``'s "last error" column."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.last: str | None = None
        self.first: str | None = None  # the round's first: a cause the spiders did not note

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.last = record.getMessage().splitlines()[0][:300]
        except Exception:
            self.last = record.msg if isinstance(record.msg, str) else None
        self.first = self.first or self.last


class WorkerState:
    def __init__(self, crawler: Crawler, interval: float) -> None:
        self.crawler = crawler
        self.layout = DataLayout.from_settings(crawler.settings)
        self.interval = interval
        self.loop = task.LoopingCall(self.write)
        self.errors = LastErrorHandler()
        self.started_at = time.time()
        self.process = psutil.Process()
        self.finished: str | None = None
        self.earlier = WorkerRecord()  # the previous round's record: where the counters resume
        self.tally = ListTally()
        self.unusual: str | None = None
        self.ratio = crawler.settings.getfloat("ROUND_UNUSUAL_RATIO")
        self.days = crawler.settings.getfloat("ROUND_HISTORY_DAYS")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WorkerState:
        extension = cls(crawler, crawler.settings.getfloat("WORKER_STATE_INTERVAL"))
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(extension.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(extension.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(extension.response_received, signal=signals.response_received)
        return extension

    def item_scraped(self, item: Any) -> None:
        if isinstance(item, scrapy.Item):
            self.tally.add(item, time.time(), self.sites())

    def item_dropped(self, item: Any, exception: BaseException) -> None:
        if isinstance(item, scrapy.Item) and isinstance(exception, DuplicateItem):
            self.tally.add(item, time.time(), self.sites())  # collected before: data all the same

    def response_received(self, response: Response, request: Request) -> None:
        query = request.meta.get("query")
        if response.status == 304 and isinstance(query, str):
            self.tally.confirm(query, time.time())

    def sites(self) -> Mapping[str, Any]:
        """The docs spider's sites (prefixes ending in ``/``), as it keeps them: not copied."""
        return getattr(self.crawler.spider, "site_urls", None) or {}

    def spider_opened(self) -> None:
        logging.getLogger().addHandler(self.errors)
        spider = sharded_spider(self.crawler)
        self.path = self.layout.worker_state(spider.name, spider.shard)
        self.earlier = read_worker(self.path) or WorkerRecord()
        self.unusual = self.earlier.unusual
        self.write()
        self.loop.start(self.interval, now=False)

    def spider_closed(self, reason: str) -> None:
        self.finished = reason
        self.judge_round(reason)
        if self.loop.running:
            self.loop.stop()
        self.write()
        logging.getLogger().removeHandler(self.errors)

    def snapshot(self) -> WorkerRecord:
        stats = self.crawler.stats.get_stats()
        spider = sharded_spider(self.crawler)
        try:
            memory = self.process.memory_full_info()
            uss, pss = memory.uss, getattr(memory, "pss", memory.uss)
        except psutil.Error:
            uss = pss = 0
        requests = stats.get("downloader/request_count", 0)
        ok = ok_answers(stats)
        failed_rounds = self.earlier.failed_rounds
        now = time.time()
        if ok:
            failed_rounds = 0  # data flows again, whether or not the round has ended
        elif self.finished is not None and requests > robots_requests(stats):
            failed_rounds += 1
        items = stats.get("item_scraped_count", 0)
        empty, empty_url = stats.get(EMPTY_LISTINGS, 0), stats.get(EMPTY_LISTING_URL)
        drift, drift_reason = stats.get(DRIFT_LISTINGS, 0), stats.get(DRIFT_REASON)
        if not empty and not items and self.finished is None:
            # Nothing parsed yet this round: the previous round's verdict stands until it has.
            empty, empty_url = self.earlier.empty_listings, self.earlier.empty_listing_url
            drift, drift_reason = self.earlier.drift_listings, self.earlier.drift
        return WorkerRecord(
            spider=spider.name,
            shard=str(spider.shard),
            pid=os.getpid(),
            started_at=self.started_at,
            updated_at=now,
            finished=self.finished,
            items=items,
            dropped=stats.get("item_dropped_count", 0),
            pages=stats.get("response_received_count", 0),
            errors=stats.get("log_count/ERROR", 0),
            last_error=self.errors.last,
            uss_mb=round(uss / MB, 1),
            pss_mb=round(pss / MB, 1),
            stats={k: v for k, v in stats.items() if isinstance(v, int | float | str)},
            requests=requests,
            responses=response_classes(stats),
            ok=ok,
            # Until data flows again, the cause stays the one a previous round saw.
            first_error=stats.get(FIRST_ERROR) or self.errors.first or (
                None if ok else self.earlier.first_error),
            empty_listings=empty,
            empty_listing_url=empty_url,
            drift_listings=drift,
            drift=drift_reason,
            items_total=self.earlier.items_total + items,
            failed_rounds=failed_rounds,
            last_ok_at=now if ok else self.earlier.last_ok_at,
            lists=self.tally.merged(self.earlier.lists, now - self.days * 86400),
            unusual=self.unusual,
        )

    def judge_round(self, reason: str) -> None:
        """A round that ended normally and got data, against the shard's recent rounds."""
        stats = self.crawler.stats.get_stats()
        if reason != "finished" or not ok_answers(stats):
            return  # cut short, or failing: health says so, and the median stays the usual
        spider = sharded_spider(self.crawler)
        now = time.time()
        current = RoundFigures(
            at=now, items=stats.get("item_scraped_count", 0),
            bytes=stats.get("downloader/response_bytes", 0),
            errors=stats.get("log_count/ERROR", 0), rows=dict(self.tally.rows),
            coverage={key: round(self.tally.coverage(key), 3) for key in self.tally.rows})
        path = self.layout.round_history(spider.name, spider.shard)
        history = [r for r in read_history(path) if r.at > now - self.days * 86400]
        self.unusual = unusual(current, history, self.ratio)
        label = f"{spider.name} {spider.shard}"
        if self.unusual and not self.earlier.unusual:
            logger.warning("%s: unusual round against the last %g days: %s", label, self.days,
                           self.unusual)
        elif self.earlier.unusual and not self.unusual:
            logger.info("%s: usual again against the last %g days", label, self.days)
        try:
            write_history(path, [*history, current], now, self.days)
        except OSError as exc:  # as the state file: a full disk must not fail the round
            logger.warning("cannot write %s: %s", path, exc)

    def write(self) -> None:
        try:
            write_worker(self.path, self.snapshot())
        except OSError as exc:  # a full disk must not take the crawl down with it
            logging.getLogger(__name__).warning("cannot write %s: %s", self.path, exc)
