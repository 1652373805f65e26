"""Crawlers for in-process component tests: Scrapy's ``get_crawler`` with the project's
settings (``scraper/settings.py``) and a spider, no reactor and no process; and real crawls
against the fake servers in this process (:func:`crawl`)."""

from __future__ import annotations

import asyncio
import io
import logging
import queue
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from scrapy import Spider
from scrapy.crawler import Crawler, CrawlerRunner
from scrapy.settings import Settings, default_settings
from scrapy.utils.test import get_crawler

from scraper import addon
from scraper import settings as project_settings
from scraper.addon import config_settings
from scraper.config.collector import load_config, parse_config
from scraper.utils.sharding import UNSHARDED

MEMORY = {
    "DELTAFETCH_STORAGE": "scraper.dedup.memorydedup.MemoryDeltaFetchStorage",
    "CONTENTHASH_STORAGE": "scraper.dedup.memorydedup.MemoryContentHashStorage",
    "BUDGET_STORAGE": "scraper.budget.memorybudget.MemoryBudgetStorage",
    "ETAG_STORAGE": "scraper.budget.memorybudget.MemoryEtagStorage",
    "SLICEPLAN_STORAGE": "scraper.slicing.memoryplans.MemorySlicePlanStorage",
    "TRENDING_ARCHIVE_STORAGE": "scraper.trending.memoryarchive.MemoryPageArchive",
}
"""Every ``*_STORAGE`` setting pointing at the in-memory stores."""


class PlainSpider(Spider):
    """What the components read of a collector spider: a name and a shard."""

    name = "t"
    shard = UNSHARDED


def project_crawler(spidercls: type[Spider] = PlainSpider, **settings: Any) -> Crawler:
    """A crawler with the project's settings, ``settings`` over them, its spider and its engine
    made (not started: to the components, a crawl that is closing)."""
    values = {name: getattr(project_settings, name) for name in dir(project_settings)
              if name.isupper()}
    # The add-on's settings for the built-in defaults, then the test's over them: a component
    # test names what it needs and never reads a collector.yaml.
    values.update(config_settings(parse_config("", "defaults")), ADDONS={})
    crawler = get_crawler(spidercls, settings_dict={**values, **settings})
    crawler.spider = spidercls.from_crawler(crawler)
    crawler.engine = crawler._create_engine()
    return crawler


# --- real crawls in this process ------------------------------------------------------------------
# A component's rule against a fake server (tests/support/fakes/) needs a real crawl, not a real
# process:
# Scrapy's own crawler, run on one asyncio reactor that a daemon thread keeps running for the
# whole session (a reactor cannot be restarted). What only a process shows (exit statuses, the
# summary line on stderr, the worker's log file, signals) stays with ``scrapy crawl`` in
# tests/support/collector.py.

_reactor: Any = None
_reactor_lock = threading.Lock()

IN_PROCESS = {
    # The process is pytest's, whose resident set says nothing about one crawl: the memory
    # limit's own tests run ``scrapy crawl`` (tests/e2e/test_crawl_docs.py).
    "MEMUSAGE_ENABLED": False,
    "GC_GEN0_THRESHOLD": 0,
    "TELNETCONSOLE_ENABLED": False,
}


def install_session_reactor() -> None:
    """Install the asyncio reactor of Scrapy's settings before any test imports
    ``twisted.internet.reactor``: that import alone installs Twisted's default one, and the
    in-process crawls after it could not run (``ReactorAlreadyInstalledError``)."""
    from twisted.internet import asyncioreactor

    asyncioreactor.install(eventloop=asyncio.new_event_loop())


def session_reactor() -> Any:
    """The session's asyncio reactor (:func:`install_session_reactor`), started on first use in
    a daemon thread."""
    global _reactor
    with _reactor_lock:
        if _reactor is None:
            from twisted.internet import reactor

            loop = reactor._asyncioEventloop

            started = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                reactor.callWhenRunning(started.set)
                reactor.run(installSignalHandlers=False)

            threading.Thread(target=run, name="test-reactor", daemon=True).start()
            if not started.wait(30):
                raise RuntimeError("the test reactor did not start")
            _reactor = reactor
        return _reactor


def collector_settings(config_path: Path | str, **overrides: Any) -> Settings:
    """What ``scrapy crawl`` builds from scraper/settings.py and ``collector.yaml`` (the
    add-on's settings at project priority), with ``overrides`` as ``-s KEY=VALUE`` would set
    them. The environment's GitHub token is not read, as tests/support/collector.py's commands drop
    it."""
    settings = Settings()
    settings.setmodule(project_settings, priority="project")
    config = load_config(config_path, environ={})
    settings.setdict(config_settings(config), priority="project")
    settings.set("ADDONS", {}, priority="project")  # set above, from the file given
    settings.setdict(IN_PROCESS, priority="project")
    settings.setdict(overrides, priority="cmdline")
    return settings


def crawl(spider: str, config_path: Path | str, *, timeout: float = 240,
          settings: dict[str, Any] | None = None, **spider_args: Any) -> Crawler:
    """One round of ``spider`` in this process: ``scrapy crawl SPIDER -a KEY=VALUE… -s …``
    without the process. Returns the finished crawler (``crawler.stats``)."""
    reactor = session_reactor()
    built = collector_settings(config_path, **(settings or {}))
    done: queue.Queue[tuple[Crawler | None, BaseException | None]] = queue.Queue()
    holder: list[Crawler] = []

    def start() -> None:
        try:
            runner = CrawlerRunner(built)
            crawler = runner.create_crawler(runner.spider_loader.load(spider))
            holder.append(crawler)
            deferred = runner.crawl(crawler, **spider_args)
        except BaseException as exc:  # handed to the test thread
            done.put((None, exc))
            return
        deferred.addCallbacks(lambda _: done.put((crawler, None)),
                              lambda failure: done.put((None, failure.value)))

    reactor.callFromThread(start)
    try:
        crawler, error = done.get(timeout=timeout)
    except queue.Empty:
        if holder:
            reactor.callFromThread(holder[0].stop)
        raise AssertionError(f"in-process crawl of {spider} still running after {timeout}s"
                             ) from None
    if error is not None:
        raise error
    assert crawler is not None
    return crawler


def crawl_round(spider: str, config_path: Path | str, *, settings: dict[str, Any] | None = None,
                **spider_args: Any) -> dict[str, Any]:
    """:func:`crawl`, which must finish (not close on a limit or an error): its stats."""
    stats = crawl(spider, config_path, settings=settings, **spider_args).stats.get_stats()
    assert stats.get("finish_reason") == "finished", stats
    return stats


class _Lines(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@contextmanager
def crawl_log(level: int = logging.INFO) -> Iterator[list[str]]:
    """The lines the crawls inside log at ``level`` and above, in Scrapy's log format (what a
    worker's log file would hold), e.g. ``... [spider] ERROR: message``."""
    lines: list[str] = []
    handler = _Lines(lines)
    handler.setFormatter(logging.Formatter(default_settings.LOG_FORMAT))
    handler.setLevel(level)
    root = logging.getLogger()
    before = root.level
    root.addHandler(handler)
    root.setLevel(min(before, level))
    try:
        yield lines
    finally:
        root.removeHandler(handler)
        root.setLevel(before)


# --- ``scrapy crawl``'s checks in this process ------------------------------------------------


def validate_crawl(argv: list[str]) -> Any:
    """``scrapy crawl ARGV``'s option parsing and validation (scraper/commands/crawl.py), in
    this process, as ``scrapy.cmdline.execute`` drives it, up to the crawl itself: the command,
    or SystemExit with its status once it printed its one line. The environment names the
    config (``COLLECTOR_CONFIG``); the caller keeps the worker lock out of this process."""
    from scrapy.cmdline import ScrapyArgumentParser, _run_print_help
    from scrapy.utils.project import get_project_settings

    from scraper.commands.crawl import Command

    cmd = Command()
    cmd.settings = get_project_settings()
    cmd.settings.setdict(cmd.default_settings, priority="command")
    parser = ScrapyArgumentParser(usage="scrapy crawl [options] <spider>")
    cmd.add_options(parser)
    opts, args = parser.parse_known_args(args=argv)
    _run_print_help(parser, cmd.process_options, args, opts)  # turns UsageError into exit 2
    return cmd


def refused_crawl(argv: list[str], config_path: Path | str
                  ) -> subprocess.CompletedProcess[str]:
    """What ``scrapy crawl ARGV`` with ``COLLECTOR_CONFIG=config_path`` exits with and prints
    when it refuses to start; a run it would start is exit status 0 here (and nothing ran)."""
    import scraper.commands.crawl as crawl_module

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, redirect_stdout(out), redirect_stderr(err):
        patch.setenv("COLLECTOR_CONFIG", str(config_path))
        patch.setenv("SCRAPY_SETTINGS_MODULE", "scraper.settings")
        patch.setattr(crawl_module, "acquire_worker_lock", lambda path, label: None)
        patch.setattr(addon, "_read", {})  # a new process has read no config yet
        try:
            validate_crawl(argv)
            status = 0
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(["scrapy", "crawl", *argv], status, out.getvalue(),
                                       err.getvalue())
