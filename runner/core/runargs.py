"""The options of a run (``python -m runner [run] --workers N …``), on their own: what the
watchdog checks a recorded command line against before starting it again, without the whole
command-line interface (which registers the watchdog itself)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from runner.core.argtypes import positive_int, size_bytes
from runner.core.usage import PROG, OneLineParser, UsageError
from scraper.config.collector import REDIS_URL_HELP, REDIS_URL_RE, SPIDER_NAMES


def spider_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    for name in names:
        if name not in SPIDER_NAMES:
            raise argparse.ArgumentTypeError(
                f"{name!r} is not a spider; choose from {', '.join(SPIDER_NAMES)}")
    if not names:
        raise argparse.ArgumentTypeError("give at least one spider, e.g. --spiders docs,search")
    return list(dict.fromkeys(names))


def redis_url_arg(text: str) -> str:
    if not REDIS_URL_RE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not {REDIS_URL_HELP}")
    return text


def config_option(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument("--config", metavar="PATH", default=default,
                        help="collector.yaml to use (else $COLLECTOR_CONFIG, else the closest "
                             "collector.yaml here or above)")


def add_run_options(run: argparse.ArgumentParser) -> None:
    run.add_argument("--workers", type=positive_int, required=True, metavar="N",
                     help="worker processes, shared among the spiders by weight; each is "
                          "scrapy crawl SPIDER -a shard=i/k (the plan is printed at start)")
    run.add_argument("--spiders", type=spider_list, default=list(SPIDER_NAMES),
                     metavar="LIST", help="comma-separated: trending,search,docs")
    run.add_argument("--once", action="store_true",
                     help="every worker runs one round; exit 1 if any failed or fetched "
                          "nothing, else 0")
    run.add_argument("--memory-budget", type=size_bytes, metavar="SIZE",
                     help="memory the workers may use, e.g. 2G (else config memory_budget, "
                          "the cgroup limit, total RAM); a plan estimated above 80%% of it "
                          "is refused")
    run.add_argument("--force", action="store_true",
                     help="start even when the plan's memory estimate exceeds 80%% of the "
                          "budget (with a warning)")
    run.add_argument("--redis-url", type=redis_url_arg, metavar="URL",
                     help="distributed mode: share work, dedup and budget through this Redis "
                          "(else config redis_url)")


def with_default_command(argv: list[str], commands: Sequence[str]) -> list[str]:
    if (any(arg in commands for arg in _not_config_values(argv))
            or any(a in ("-h", "--help") for a in argv[:1])):
        return argv
    first = argv[2:3] if argv[:1] == ["--config"] else argv[:1]
    if first and not first[0].startswith("-"):
        # `python -m runner statsu`: a word where the command goes is a mistyped command.
        raise UsageError(f"unknown command {first[0]!r} ({', '.join(commands)})")
    return ["run", *argv] if "--config" not in argv[:1] else [*argv[:2], "run", *argv[2:]]


def _not_config_values(argv: list[str]) -> list[str]:
    """``argv`` without the values of ``--config``: a config file named ``run`` is no command."""
    return [arg for i, arg in enumerate(argv) if i == 0 or argv[i - 1] != "--config"]


def parse_run_options(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed as ``python -m runner`` would parse a run; UsageError unless it is one."""
    parser = OneLineParser(prog=PROG)
    config_option(parser, None)
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    run = sub.add_parser("run")
    config_option(run, argparse.SUPPRESS)
    add_run_options(run)
    try:
        args = parser.parse_args(with_default_command(argv, ["run"]))
    except SystemExit:  # --help
        raise UsageError("help is not a run") from None
    if args.command != "run":
        raise UsageError("not a run")
    return args
