"""``python -m runner reparse --spider trending [--since DATE]``: read the archived pages again.

After a parser fix (or a markup change the parser now reads), the history collected while it
was broken is not lost: every page was archived as served (:mod:`scraper.trending.archive`).
This runs the current parser (``TRENDING_PARSER``, with the config's ``spiders.trending
.settings``) over the archived pages, writes a page snapshot for each page whose rows it reads
differently from the last reading, as the spider would have written it, with ``parsed_at`` now
(``items/trending/trending-reparse-{stamp}.jsonl``, renamed into place when whole), records
the new reading in the archive, and then updates the catalog, where a newer reading of a fetch
replaces the old one. A second run finds nothing to change and writes nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runner.core.usage import PROG as RUNNER
from scraper.config.collector import CollectorConfig
from scraper.utils.layout import DataLayout

if TYPE_CHECKING:
    from scrapy.settings import Settings

    from scraper.trending.archive import ArchivedPage, PageArchiveStorage

PROG = f"{RUNNER} reparse"
_DATE_RE = re.compile(r"^\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d(\.\d{1,3})?)?Z?)?$")


def since_date(text: str) -> str:
    """A date or UTC time to start from: ``2026-11-30`` or ``2026-11-30T12:00:00Z``."""
    if not _DATE_RE.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date such as 2026-11-30 or a UTC time such as "
            "2026-11-30T12:00:00Z")
    return text.rstrip("Z")


def trending_settings(config: CollectorConfig) -> Settings:
    """The settings a ``scrapy crawl trending`` worker of this config runs with."""
    from scrapy.settings import Settings

    from scraper.addon import config_settings

    settings = Settings()
    settings.setmodule("scraper.settings", priority="project")
    settings.update(config_settings(config), priority="project")
    settings.setdict(dict(config.trending.settings), priority="spider")
    return settings


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = ("Read the archived trending pages again with the current parser, "
                          "and update the page snapshots and the catalog.")
    add_config_option(parser)
    parser.add_argument("--spider", choices=["trending"], required=True)
    parser.add_argument("--since", type=since_date, metavar="DATE",
                        help="only pages fetched at or after this date or UTC time")
    parser.set_defaults(handler=cmd_reparse)


def cmd_reparse(args: argparse.Namespace, config: CollectorConfig) -> int:
    # Scrapy and the spider only when the command runs: every runner command builds the parser.
    from scrapy.crawler import Crawler

    from runner.catalog.build import build_catalog
    from scraper.stores.base import build_store
    from spiders.trending import TrendingSpider

    layout = DataLayout(config.data_dir)
    settings = trending_settings(config)
    archive: PageArchiveStorage = build_store(Crawler(TrendingSpider, settings),
                                       "TRENDING_ARCHIVE_STORAGE")
    try:
        read, changed, path = reparse(archive, settings, config, layout, args.since)
    finally:
        archive.close()
    where = f" -> {path}" if path else " (nothing to write)"
    print(f"reparse: {read:,} archived pages read, {changed:,} read differently{where}")
    if changed:
        print(build_catalog(layout, config).describe(layout.catalog_db))
    return 0


def reparse(archive: PageArchiveStorage, settings: Settings, config: CollectorConfig,
            layout: DataLayout, since: str | None) -> tuple[int, int, str | None]:
    """Returns (pages read, pages read differently, the snapshot file written or None).

    Each page is read as the spider reads it (:func:`scraper.trending.pages.read_rows`): cut at
    ``TRENDING_MAX_ELEMENTS`` start tags before it is parsed, at most ``TRENDING_MAX_ROWS``
    rows, so an archived hostile page costs a re-parse no more than it cost the crawl; a body
    the archive cannot give back (it does not decompress, decompresses past
    ``TRENDING_MAX_BYTES`` or does not match its sha256) is skipped with one line on stderr."""
    from pipelines.itemstore import PART_SUFFIX, json_line
    from scraper.trending.archive import ArchivedPage, UnreadableBody
    from scraper.trending.pages import (
        KINDS,
        load_parser,
        parse_list_key,
        parse_profile,
        read_rows,
        snapshot_of,
    )

    parsers = {kind: load_parser(settings, kind) for kind in KINDS}
    cap = settings.getint("TRENDING_MAX_ROWS")
    elements = settings.getint("TRENDING_MAX_ELEMENTS")
    directory = layout.items_dir("trending")
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"trending-reparse-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.jsonl"
    part = final.with_name(final.name + PART_SUFFIX)
    read = 0
    readings: list[ArchivedPage] = []
    with open(part, "wb") as out:
        for page in archive.pages(since):
            read += 1
            kind = parse_list_key(page.list_key)[0]
            parser, version = parsers[kind]
            try:
                body = archive.body(page)
            except UnreadableBody as exc:  # damage or a bomb: this fetch, not the others
                print(f"{PROG}: skipped {exc}", file=sys.stderr)
                continue
            rows, _ = read_rows(parser, body, None, config.github.web_url, cap, elements)
            del body
            snapshot = snapshot_of(kind, rows)
            profile = parse_profile(snapshot, kind)
            if profile.rows_hash == page.profile.rows_hash:
                continue
            if snapshot:
                out.write(json_line(_snapshot(page, snapshot, version)))
            readings.append(ArchivedPage(
                url=page.url, observed_at=page.observed_at, status=page.status,
                sha256=page.sha256, list_key=page.list_key, parser_version=version,
                profile=profile))
        out.flush()
        os.fsync(out.fileno())
        written = out.tell()
    if written:
        os.replace(part, final)
    else:
        part.unlink()
    # Only once the snapshots are in place: a kill before leaves the archive saying the old
    # reading, so the next run writes them again.
    for page in readings:
        archive.reparsed(page)
    return read, len(readings), str(final) if written else None


def _snapshot(page: ArchivedPage, rows: list[dict[str, Any]], version: str) -> Any:
    from scraper.items import content_hash
    from scraper.trending.pages import page_item, parse_list_key
    from scraper.utils.stamps import utc_stamp
    from spiders.trending import now_ms

    kind, period, language, spoken = parse_list_key(page.list_key)
    item = page_item(kind, observed_at=page.observed_at, period=period, language=language,
                     spoken=spoken, url=page.url, rows=rows, archive_sha256=page.sha256,
                     parser_version=version, parsed_at=now_ms())
    item.update(spider="trending", shard=None, collected_at=utc_stamp())
    item["content_hash"] = content_hash(item)
    return item
