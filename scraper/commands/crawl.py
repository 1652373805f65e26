"""``scrapy crawl``, checked first: config, spider name, ``-a`` arguments, one process per shard.

Everything the user can get wrong is reported as one line on stderr with exit status 2 before
Scrapy starts, never as a traceback. The runner's workers run this very command in their forked
processes, so ``scrapy crawl docs -a shard=0/4`` by hand is exactly a worker.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import NoReturn

from scrapy import Spider, signals
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.spiderloader import get_spider_loader

from scraper.addon import apply
from scraper.commands.interrupts import (
    INTERRUPTED_EXIT,
    exit_now,
    exit_on_interrupt,
    note_interrupts,
)
from scraper.commands.project import command_line_problem
from scraper.config.collector import ConfigError, resolve_config_path
from scraper.extensions.feedfilter import rows_only_feeds
from scraper.extensions.logrotate import open_log
from scraper.utils.diskspace import (
    DISK_FULL_EXIT,
    DISK_FULL_REASON,
    START_FREE_BYTES,
    free_bytes,
    is_disk_full,
    probe_writable,
)
from scraper.utils.layout import DataLayout
from scraper.utils.logtail import last_failure
from scraper.utils.outcome import NOTHING_FETCHED_EXIT, fetched_nothing
from scraper.utils.quietlog import quiet_startup
from scraper.utils.sharding import UNSHARDED, Shard, ShardError
from scraper.utils.spiderargs import (
    RESET_ARGUMENTS,
    SCRAPYD_ARGUMENTS,
    SPIDER_ARGUMENTS,
    SpiderArgumentError,
    parse_switch,
)
from scraper.utils.units import format_size
from scraper.utils.workerlock import WorkerLockedError, acquire_worker_lock

USAGE_ERROR = 2
"""Exit status for anything the user must fix (config, arguments)."""
ALREADY_RUNNING = 3
"""Exit status when another process holds this spider-shard."""


def fail(message: str, status: int = USAGE_ERROR) -> NoReturn:
    print(f"scrapy crawl: {message}", file=sys.stderr)
    raise SystemExit(status)


class Command(ScrapyCrawlCommand):
    finish_reason: str | None = None
    failed_round = False
    by_hand = False  # SIGINT is this command's (a terminal's Ctrl-C), not held by a runner
    interrupted = False

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        # Scrapy's own parser errors (``-a shard`` without ``=``, ``-o`` without a value) and its
        # UsageErrors go through parser.error: one line and exit 2 here, not a usage block.
        parser.error = fail  # type: ignore[method-assign]
        self.by_hand = exit_on_interrupt("scrapy crawl")

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        try:
            # Now, not when Scrapy makes its CrawlerProcess: the log file and the worker lock
            # below are under the config's data_dir. The add-on's own calls later find the
            # config already read.
            apply(self.settings)
        except (ConfigError, ValueError) as exc:
            fail(str(exc))
        if len(args) != 1:
            fail("give exactly one spider name, e.g. scrapy crawl docs -a shard=0/4")
        loader = get_spider_loader(self.settings)
        if args[0] not in loader.list():
            fail(f"no spider named {args[0]!r}; the spiders are: {', '.join(loader.list())}")
        unknown = sorted(set(opts.spargs) - {*SPIDER_ARGUMENTS, *SCRAPYD_ARGUMENTS})
        if unknown:
            fail(f"-a {unknown[0]}: not an argument of the spiders; they take: "
                 + ", ".join(SPIDER_ARGUMENTS))
        try:
            for name in RESET_ARGUMENTS:
                if name in opts.spargs:
                    parse_switch(name, opts.spargs[name])
        except SpiderArgumentError as exc:
            fail(str(exc))
        problem = command_line_problem(self.settings)
        if problem:
            fail(problem)
        feeds = rows_only_feeds(self.settings)
        if feeds is not None:
            self.settings.set("FEEDS", feeds, priority=self.settings.getpriority("FEEDS") or 0)
        try:
            self.shard = Shard.parse(opts.spargs["shard"]) if "shard" in opts.spargs else UNSHARDED
        except ShardError as exc:
            fail(f"-a {exc}")
        self.layout = DataLayout.from_settings(self.settings)
        self.spider_name = args[0]
        log_file = self.layout.log_file(self.spider_name, self.shard)
        try:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            open_log(log_file).close()  # refuses a symlink before Scrapy's handler opens it
            self.log_offset = log_file.stat().st_size
            probe_writable(self.layout.items_dir(self.spider_name))
        except OSError as exc:
            fail(f"data_dir {self.layout.root}: cannot write {exc.filename}: {exc.strerror}")
        self.settings.set("LOG_FILE", str(log_file), priority="project")
        # Before Scrapy configures logging (CrawlerProcess is made after process_options): a
        # refused process must not write its start-up banner into the running worker's log.
        self._claim_spider_shard()

    def _claim_spider_shard(self) -> None:
        label = f"{self.spider_name} {self.shard}"
        free = free_bytes(self.layout.root)
        if free < START_FREE_BYTES:
            fail(f"disk full: {self.layout.root} has {format_size(free)} free; not starting "
                 f"{label}", DISK_FULL_EXIT)
        try:
            acquire_worker_lock(self.layout.worker_lock(self.spider_name, self.shard), label)
        except WorkerLockedError as exc:
            fail(str(exc), ALREADY_RUNNING)
        except OSError as exc:
            if is_disk_full(exc):
                fail(f"disk full: cannot write under {self.layout.root}", DISK_FULL_EXIT)
            fail(exc.strerror or str(exc))

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        self.run_round(opts)
        if self.by_hand:
            # A Ctrl-C is one line and 130 up to the last instant, Python's finalization included
            exit_now(self.exitcode)

    def run_round(self, opts: argparse.Namespace) -> None:
        assert self.settings is not None
        label = f"{self.spider_name} {self.shard}"
        if sys.stderr.isatty() and self.settings.get("LOG_FILE"):
            source = resolve_config_path(self.settings.get("COLLECTOR_CONFIG"))
            print(f"{label}: config {source or 'built-in defaults (no collector.yaml)'}, "
                  f"logging to {self.settings['LOG_FILE']}", file=sys.stderr)
        # On a full disk a log line can't be written: drop it rather than print a traceback.
        logging.raiseExceptions = False
        # Scrapy logs a DEBUG line per page and per item ("Crawled", "Scraped", duplicates
        # dropped) and leaves its loggers at NOTSET, so each builds a LogRecord that the handler
        # then drops: at the handler's level, the logger drops them before they are built.
        logging.getLogger("scrapy").setLevel(self.settings["LOG_LEVEL"])
        quiet_startup(self.settings)
        # Scrapy's own run, with the crawler kept: its spider_closed says how the round ended.
        # In the distributed mode SPIDER_LOADER_CLASS hands out the spider's Redis variant.
        assert self.crawler_process is not None
        crawler = self._create_crawler(self.spider_name)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)
        if self.by_hand:
            crawler.signals.connect(self._engine_started, signal=signals.engine_started)
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = 1
            self._say_why_not_started(label, Path(self.settings["LOG_FILE"]))
        elif self.finish_reason is None and self.by_hand:
            # Stopped between Scrapy's handlers taking over and the engine running: Scrapy
            # stops the reactor then without closing the spider, and without a word.
            print("scrapy crawl: interrupted", file=sys.stderr)
            self.exitcode = INTERRUPTED_EXIT
            return
        if self.interrupted and self.finish_reason != DISK_FULL_REASON:
            self.exitcode = INTERRUPTED_EXIT
        elif self.finish_reason == DISK_FULL_REASON:
            self.exitcode = DISK_FULL_EXIT
        elif self.failed_round and not self.exitcode:
            self.exitcode = NOTHING_FETCHED_EXIT

    def _say_why_not_started(self, label: str, log: Path) -> None:
        """Scrapy wrote the traceback into the log file only: its last line, on the terminal.
        A runner's worker has its stderr in that log already, and the runner reads it there."""
        try:
            if os.path.samestat(os.fstat(sys.stderr.fileno()), os.stat(log)):
                return
        except (OSError, ValueError):
            pass
        cause = last_failure(log, self.log_offset) or "see the log"
        print(f"scrapy crawl: {label} could not start: {cause} (log: {log})", file=sys.stderr)

    def _engine_started(self) -> None:
        note_interrupts(self._interrupted)

    def _interrupted(self) -> None:
        self.interrupted = True

    def _spider_closed(self, spider: Spider, reason: str) -> None:
        self.finish_reason = reason
        assert spider.crawler.stats is not None
        self.failed_round = fetched_nothing(spider.crawler.stats.get_stats())
