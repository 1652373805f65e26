"""argparse ``type=`` converters shared by the runner's subcommands: one wording for one mistake."""

from __future__ import annotations

import argparse

from scraper.utils.units import SIZE_HELP, parse_size

MAX_WORKERS = 10_000
"""The plan's arithmetic is float: a count like 10**400 would overflow it."""


def positive_int(text: str) -> int:
    """A count of workers: a whole number from 1 to MAX_WORKERS."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    if value > MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"{text!r} must be at most {MAX_WORKERS}")
    return value


def size_bytes(text: str) -> int:
    """A size above zero (``100MB``, ``2G``) in bytes."""
    try:
        size = parse_size(text)
    except ValueError:
        size = 0
    if size <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not {SIZE_HELP}")
    return size


def add_min_workers(parser: argparse.ArgumentParser, help: str) -> None:
    """``--min-workers N``, shared by the watchdog and install-cron (which passes it on)."""
    parser.add_argument("--min-workers", type=positive_int, metavar="N", help=help)


def size_text(text: str) -> str:
    """A size checked now but passed on as written (a crontab line reads as the user typed it)."""
    size_bytes(text)
    return text.strip()
