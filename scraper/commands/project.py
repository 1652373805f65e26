"""What Scrapy's own inspection commands (``scrapy shell``, ``fetch``, ``parse``) need to work in
this project as in any other: the config as settings, and none of a round's bookkeeping.

They download through the same middlewares as a crawl (the GitHub token on API requests only,
the shared rate-limit budget, retries), with the config the add-on sets as for a crawl; a URL
under ``github.api_url`` without ``--spider`` is asked as the search spider asks it, so with the
token, as README says. They write nothing a round would: no item file, no URL, content or ETag
record, no worker state or summary line. So ``scrapy parse URL --spider docs`` shows what the
callback yields, whatever was collected before.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings, Settings

from scraper.addon import apply
from scraper.commands.interrupts import exit_on_interrupt
from scraper.config.collector import ConfigError
from scraper.config.settingrules import plain
from scraper.config.settingtypes import owned_setting, setting_problem
from scraper.downloadermiddlewares.githubauth import under_api
from scraper.utils.quietlog import quiet_startup

ROUND_BOOKKEEPING = {
    "EXTENSIONS": ("scraper.extensions.workerstate.WorkerState",
                   "scraper.extensions.summary.RoundSummary",
                   "scraper.extensions.logrotate.LogRotation",
                   "scraper.extensions.ledger.FetchLedger",
                   "scraper.cluster.ledger.ClusterLedger"),
    "SPIDER_MIDDLEWARES": ("scraper.dedup.deltafetch.ShardedDeltaFetch",),
    # A round's If-None-Match: a page asked by hand is shown whole, never as a bodiless 304
    # (which Scrapy's shell drops without a word), and leaves no ETag for the next round.
    "DOWNLOADER_MIDDLEWARES": ("scraper.budget.conditional.ConditionalRequestMiddleware",),
}
"""Components that record a round; ITEM_PIPELINES are off as a whole."""
TOKEN_SPIDER = "search"
"""The spider whose requests carry the GitHub token (``uses_github_token``): a URL under
``github.api_url`` asked without ``--spider`` is asked as it asks, token and budget included."""


def without_round_bookkeeping(settings: BaseSettings) -> dict[str, Any]:
    changes: dict[str, Any] = {"ITEM_PIPELINES": {}}
    for name, paths in ROUND_BOOKKEEPING.items():
        changes[name] = {**settings.getdict(name), **dict.fromkeys(paths)}
    return changes


def command_line_problem(settings: BaseSettings) -> str | None:
    """The first ``-s NAME=VALUE`` that Scrapy could not read or its rule refuses, as the one
    line that says what would be right (scraper/config/settingrules.py); None when all pass."""
    cmdline = SETTINGS_PRIORITIES["cmdline"]
    for name, value in settings.items():
        if settings.getpriority(name) != cmdline:
            continue
        instead = owned_setting(name)
        if instead:
            return f"-s {name}: {instead}"
        expected = setting_problem(name, value)
        if expected:
            return f"-s {name}={plain(value)!r} is not valid: expected {expected}"
    return None


class CollectorTool:
    """Mixin for a Scrapy command class (first in the bases)."""

    settings: Settings | None  # as ScrapyCommand's: set by scrapy.cmdline
    quiet_interrupt = True
    """A Ctrl-C before Scrapy's own handlers take over is one line and exit 130 (as for
    ``scrapy crawl``); off for ``shell``, whose console reads Ctrl-C as its own."""

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)  # type: ignore[misc]
        if self.quiet_interrupt:
            exit_on_interrupt(f"scrapy {self.name()}")

    @classmethod
    def name(cls) -> str:
        return cls.__module__.rsplit(".", 1)[-1]

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)  # type: ignore[misc]
        assert self.settings is not None
        try:
            # Now, for one line instead of a traceback from the add-on (scraper/addon.py),
            # whose own call later finds the config already read.
            apply(self.settings)
        except (ConfigError, ValueError) as exc:
            self.refuse(str(exc))
        problem = command_line_problem(self.settings)
        if problem:
            self.refuse(problem)
        self.settings.setdict(without_round_bookkeeping(self.settings), priority="project")
        url = args[0] if args else None
        if url and not getattr(opts, "spider", True) and under_api(url,
                                                                   self.settings["GITHUB_API_URL"]):
            opts.spider = TOKEN_SPIDER

    def refuse(self, message: str) -> NoReturn:
        print(f"scrapy {self.name()}: {message}", file=sys.stderr)
        raise SystemExit(2)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        quiet_startup(self.settings)
        super().run(args, opts)  # type: ignore[misc]
