"""``trending``: github.com/trending pages, one item per repository row, plus one snapshot
record per fetched page (every row as observed then, never deduplicated); with
``TRENDING_DEVELOPERS_ENABLED``, the developer lists (``/trending/developers``) too, one item
per developer row and a snapshot per page. Every fetched page is
kept as served in the page archive first (``TRENDING_ARCHIVE_STORAGE``), so a parser fix can
read it again (``python -m runner reparse``)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import Response

from scraper.config.collector import DeveloperList, developer_entries, trending_entries
from scraper.items import CollectedItem
from scraper.stores.base import build_store
from scraper.trending.archive import ArchivedPage, PageArchiveStorage, body_sha256, retention_cutoff
from scraper.trending.drift import DRIFT_ROUNDS, drift_reason, note_drift
from scraper.trending.pages import (
    DEVELOPERS,
    KINDS,
    REPOSITORIES,
    Parser,
    list_key,
    load_parser,
    page_item,
    parse_profile,
    read_rows,
    row_items,
    snapshot_of,
)
from scraper.utils.ledger import LEDGER_META
from scraper.utils.outcome import note_empty_listing
from spiders.base import CollectorSpider


class TrendingSpider(CollectorSpider):
    name = "trending"
    archive: PageArchiveStorage
    parsers: dict[str, tuple[Parser, str]]  # kind: (parser, its version)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> TrendingSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.parsers = {kind: load_parser(crawler.settings, kind) for kind in KINDS}
        spider.archive = build_store(crawler, "TRENDING_ARCHIVE_STORAGE")
        retention = crawler.settings.get("TRENDING_ARCHIVE_RETENTION")
        cutoff = retention_cutoff(None if retention is None else float(retention))
        if cutoff is not None:
            spider.archive.prune(cutoff)
        return spider

    def closed(self, reason: str) -> None:
        self.archive.close()

    def start_entries(self) -> list[tuple[str, str, str] | DeveloperList]:
        settings = self.settings
        developers = settings.getlist("TRENDING_DEVELOPER_LANGUAGES") \
            if settings.getbool("TRENDING_DEVELOPERS_ENABLED") else []
        return trending_entries(settings.getlist("TRENDING_LANGUAGES"),
                                settings.getlist("TRENDING_PERIODS"),
                                settings.getlist("TRENDING_SPOKEN_LANGUAGES")) + \
            developer_entries(developers, settings.getlist("TRENDING_DEVELOPER_PERIODS"))

    def listing_url(self, language: str, period: str, spoken: str = "",
                    kind: str = REPOSITORIES) -> str:
        path = "/trending/developers" if kind == DEVELOPERS else "/trending"
        path = f"{path}/{language}" if language else path
        query = {"since": period, **({"spoken_language_code": spoken} if spoken else {})}
        return f"{self.settings['GITHUB_WEB_URL']}{path}?{urlencode(query)}"

    ledger_kind = "list"

    def ledger_key(self, entry: Any) -> str:
        language, period, spoken, kind = entry_list(entry)
        return list_key(period, language, spoken, kind)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for entry in self.my_entries():
            language, period, spoken, kind = entry_list(entry)
            yield scrapy.Request(
                self.listing_url(language, period, spoken, kind),
                callback=self.parse,
                errback=self.request_failed,
                # A listing is re-read every round: never filtered as already seen.
                meta={"deltafetch_enabled": False, "period": period, "language": language,
                      "spoken": spoken, "list_kind": kind,
                      LEDGER_META: list_key(period, language, spoken, kind)},
                dont_filter=True,
            )

    def parse(self, response: Response, **kwargs: Any) -> Iterator[CollectedItem]:
        observed_at = now_ms()
        kind, language, period, spoken = listing_of(response)
        parser, parser_version = self.parsers[kind]
        cap = self.settings.getint("TRENDING_MAX_ROWS")
        elements = self.settings.getint("TRENDING_MAX_ELEMENTS")
        rows, cut = read_rows(parser, response.body, getattr(response, "encoding", None),
                              self.settings["GITHUB_WEB_URL"], cap + 1, elements)
        if cut and len(rows) <= cap:
            self.crawler.stats.inc_value("trending/bad_responses")
            self.logger.error("trending page holds more than %d elements "
                              "(TRENDING_MAX_ELEMENTS; GitHub's has about 5,000): %s; parsed "
                              "only those, %d rows", elements, response.url, len(rows))
        if len(rows) > cap:  # GitHub serves 25: this is not a trending page
            self.crawler.stats.inc_value("trending/bad_responses")
            self.logger.error("trending page answered more than %d rows (TRENDING_MAX_ROWS; "
                              "GitHub serves 25): %s; kept the first %d", cap, response.url, cap)
            rows = rows[:cap]
        snapshot = snapshot_of(kind, rows)
        key, profile = list_key(period, language, spoken, kind), parse_profile(snapshot, kind)
        drift = drift_reason(profile, [p.profile for p in self.archive.recent(
            key, DRIFT_ROUNDS, observed_at)], KINDS[kind].drift_fields)
        page = ArchivedPage(url=response.url, observed_at=observed_at, status=response.status,
                            sha256=body_sha256(response.body), list_key=key,
                            parser_version=parser_version, profile=profile,
                            drifted=drift is not None,
                            headers=kept_headers(response,
                                                 self.settings.getlist("TRENDING_ARCHIVE_HEADERS")))
        # Kept before anything is made of it: whatever the parser did, the page can be read
        # again, and the snapshot below names a body that exists.
        self.archive.put(page, response.body)
        if not rows:
            note_empty_listing(self.crawler.stats, response.url)
            self.yielded_nothing(response, "empty page", f"parsed to zero rows: {response.url}")
            if not cut:  # a cut page has had its one ERROR line above
                self.crawler.stats.inc_value("trending/empty_pages")
                self.logger.error("trending page parsed to zero rows: %s (status %d)",
                                  response.url, response.status)
            return
        if drift:
            self.crawler.stats.inc_value("trending/drift_pages")
            self.logger.error("trending page %s", note_drift(self.crawler.stats,
                                                              response.url, drift))
        # Written before the rows: the rows may all be dropped as unchanged content, the
        # snapshot never is.
        yield self.stamp(page_item(
            kind, observed_at=observed_at, period=period, language=language, spoken=spoken,
            url=response.url, rows=snapshot, archive_sha256=page.sha256,
            parser_version=parser_version, parsed_at=observed_at))
        for item in row_items(kind, rows, period, language, spoken):
            yield self.stamp(item)


def entry_list(entry: tuple[str, str, str] | DeveloperList) -> tuple[str, str, str, str]:
    """(language, period, spoken language, kind) of a start entry."""
    if isinstance(entry, DeveloperList):
        language, period = entry
        return language, period, "", DEVELOPERS
    language, period, spoken = entry
    return language, period, spoken, REPOSITORIES


def listing_of(response: Response) -> tuple[str, str, str, str]:
    """(kind, language, period, spoken language) of a listing page: its request's, or read
    from the URL of one asked for by hand (``scrapy parse
    https://github.com/trending/python?since=weekly``, ``…/trending/developers?since=daily``)."""
    meta = response.meta
    if "period" in meta:
        return (meta.get("list_kind", REPOSITORIES), meta["language"], meta["period"],
                meta.get("spoken", ""))
    parts = urlsplit(response.url)
    language = parts.path.rstrip("/").removeprefix("/trending").lstrip("/")
    kind = REPOSITORIES
    if language == DEVELOPERS or language.startswith(f"{DEVELOPERS}/"):
        kind, language = DEVELOPERS, language.removeprefix(DEVELOPERS).lstrip("/")
    query = parse_qs(parts.query)
    spoken = "" if kind == DEVELOPERS else query.get("spoken_language_code", [""])[0]
    return kind, language, query.get("since", ["daily"])[0], spoken


def kept_headers(response: Response, names: list[str]) -> tuple[tuple[str, str], ...]:
    """The response's headers of ``names`` (``TRENDING_ARCHIVE_HEADERS``), as served, in that
    order."""
    return tuple((name, value.decode("latin-1")) for name in names
                 for value in response.headers.getlist(name))


def now_ms() -> str:
    """ISO-8601 UTC with milliseconds: two fetches of one list never share an instant."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
