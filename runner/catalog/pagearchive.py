"""``python -m runner archive export|show|list``: the page archive read back, by anyone.

* ``archive export --format warc --out FILE [--since DATE] [--until DATE] [--list NAME …]``:
  the fetches as a WARC 1.1 file (:mod:`runner.catalog.warc`), written as ``FILE.part`` and
  renamed when whole.
* ``archive show URL [--at TIME]``: the body of the last fetch of URL at or before TIME (the
  end of that day for a date; default: the last of all), as served, to stdout.
* ``archive list [--since DATE] [--until DATE] [--list NAME …]``: one tab-separated line per
  fetch: time, URL, status, rows, sha256.

A list is named as its feed is (``daily-all``, ``weekly-python-zh``,
``developers-daily-all``); ``--since`` is inclusive, ``--until`` exclusive. The archive is the
one ``scrapy crawl trending`` writes (``TRENDING_ARCHIVE_STORAGE`` with the config's
``spiders.trending.settings``). A body it cannot give back (it does not decompress,
decompresses past ``TRENDING_MAX_BYTES``, or does not match its sha256) is skipped with one line
on stderr naming the fetch; the others are read.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from runner.catalog.reparse import since_date, trending_settings
from runner.core.usage import PROG as RUNNER
from runner.core.usage import USAGE_ERROR
from scraper.config.collector import CollectorConfig

if TYPE_CHECKING:
    from scraper.trending.archive import PageArchiveStorage

PROG = f"{RUNNER} archive"
WARC_HINT = "--format warc needs warcio: pip install -e '.[archive]'"


def at_time(text: str) -> str:
    """``--at``: a UTC time, or a date meaning the end of that day."""
    moment = since_date(text)
    return f"{moment}T23:59:59.999" if len(moment) == 10 else moment


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = ("The page archive read back: every fetched trending page as a WARC "
                          "file, one page as served, or the list of fetches.")
    add_config_option(parser)
    sub = parser.add_subparsers(dest="archive_command", required=True,
                                metavar="{export,show,list}")

    export = sub.add_parser("export", help="the fetches as a WARC 1.1 file (gzip per record)")
    export.add_argument("--format", choices=["warc"], required=True)
    export.add_argument("--out", required=True, metavar="FILE")
    _range_options(export)
    export.set_defaults(handler=cmd_export)

    show = sub.add_parser("show", help="a fetched page's body, as served, to stdout")
    show.add_argument("url", metavar="URL", help="the page's URL, as `archive list` shows it")
    show.add_argument("--at", type=at_time, metavar="TIME",
                      help="the fetch at or before this UTC time (a date: the end of that "
                           "day); default: the last")
    show.set_defaults(handler=cmd_show)

    listing = sub.add_parser("list", help="one line per fetch: time, URL, status, rows, sha256")
    _range_options(listing)
    listing.set_defaults(handler=cmd_list)
    for command in (export, show, listing):
        add_config_option(command)
        command.epilog = "Explained in docs/dataset.md."


def _range_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", type=since_date, metavar="DATE",
                        help="only fetches at or after this date or UTC time")
    parser.add_argument("--until", type=since_date, metavar="DATE",
                        help="only fetches before this date or UTC time")
    parser.add_argument("--list", action="append", dest="lists", metavar="NAME",
                        help="only this list, named as its feed is (daily-all, "
                             "weekly-python-zh, developers-daily-all); repeat for more")


def list_name(key: str) -> str:
    """A list key (``daily|python|zh``) as its feed names it (``daily-python-zh``)."""
    from scraper.trending.pages import DEVELOPERS, parse_list_key

    kind, period, language, spoken = parse_list_key(key)
    prefix = "developers-" if kind == DEVELOPERS else ""
    return f"{prefix}{period}-{language or 'all'}{f'-{spoken}' if spoken else ''}"


class ArchiveUsageError(Exception):
    """Something the user must fix (an unknown list name); the message is the one line."""


def _list_keys(archive: PageArchiveStorage, names: list[str] | None) -> list[str] | None:
    if not names:
        return None
    by_name = {list_name(key): key for key in archive.list_keys()}
    wanted = [name for value in names for name in value.split(",") if name]
    unknown = [name for name in wanted if name not in by_name]
    if unknown:
        held = ", ".join(sorted(by_name)) or "none"
        raise ArchiveUsageError(f"--list {unknown[0]}: the archive holds no such list "
                                f"(it holds: {held})")
    return [by_name[name] for name in wanted]


def _open(config: CollectorConfig) -> PageArchiveStorage:
    # Scrapy and the spider only when the command runs: every runner command builds the parser.
    from scrapy.crawler import Crawler

    from scraper.stores.base import build_store
    from spiders.trending import TrendingSpider

    store: PageArchiveStorage = build_store(Crawler(TrendingSpider, trending_settings(config)),
                                            "TRENDING_ARCHIVE_STORAGE")
    return store


def _skipped(line: str) -> None:
    print(f"{PROG}: skipped {line}", file=sys.stderr)


def cmd_export(args: argparse.Namespace, config: CollectorConfig) -> int:
    from runner.catalog.warc import write_warc

    try:
        import warcio  # noqa: F401 - present and importable, before any work
    except ImportError:
        print(f"{PROG} export: {WARC_HINT}", file=sys.stderr)
        return USAGE_ERROR
    out = Path(args.out)
    part = out.with_name(out.name + ".part")
    archive = _open(config)
    try:
        lists = _list_keys(archive, args.lists)
        with open(part, "wb") as handle:
            written = write_warc(archive, archive.pages(args.since, args.until, lists), handle,
                                 out.name, _skipped)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(part, out)
    except ArchiveUsageError as exc:
        print(f"{PROG} export: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except OSError as exc:
        part.unlink(missing_ok=True)
        print(f"{PROG} export: cannot write {exc.filename or out}: {exc.strerror}",
              file=sys.stderr)
        return 1
    finally:
        archive.close()
    print(f"archive export: {written:,} fetches -> {out}")
    return 0


def cmd_show(args: argparse.Namespace, config: CollectorConfig) -> int:
    from scraper.trending.archive import UnreadableBody

    archive = _open(config)
    try:
        page = archive.latest(args.url, args.at)
        if page is None:
            when = f" at or before {args.at}" if args.at else ""
            print(f"{PROG} show: no fetch of {args.url}{when} in the archive ('{PROG} list' "
                  "lists them)", file=sys.stderr)
            return 1
        try:
            body = archive.body(page)
        except UnreadableBody as exc:
            print(f"{PROG} show: {exc}", file=sys.stderr)
            return 1
    finally:
        archive.close()
    return _write_out(lambda: sys.stdout.buffer.write(body))


def cmd_list(args: argparse.Namespace, config: CollectorConfig) -> int:
    archive = _open(config)
    try:
        lists = _list_keys(archive, args.lists)

        def lines() -> None:
            for page in archive.pages(args.since, args.until, lists):
                sys.stdout.write(f"{page.observed_at}\t{page.url}\t{page.status}\t"
                                 f"{page.profile.rows}\t{page.sha256}\n")

        return _write_out(lines)
    except ArchiveUsageError as exc:
        print(f"{PROG} list: {exc}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        archive.close()


def _write_out(write: Callable[[], object]) -> int:
    """``write`` to stdout; a reader that had enough (``| head``) is no error."""
    try:
        write()
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing left to flush at exit
        os.close(devnull)
    return 0
