"""``trending``: github.com/trending pages, one item per repository row, plus one snapshot
record per fetched page (every row as observed then, never deduplicated). Every fetched page is
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
from scrapy.utils.misc import load_object

from scraper.config import trending_entries
from scraper.drift import DRIFT_ROUNDS, drift_reason, note_drift
from scraper.items import ALL_LANGUAGES, CollectedItem, TrendingPageItem, TrendingRepoItem
from scraper.outcome import note_empty_listing
from scraper.parsers.bounds import cut_at_elements
from scraper.stores.archive import ArchivedPage, PageArchive, body_sha256, retention_cutoff
from scraper.trendingpages import list_key, load_parser, parse_profile, snapshot_rows
from spiders.base import CollectorSpider


class TrendingSpider(CollectorSpider):
    name = "trending"
    archive: PageArchive

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> TrendingSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.parser, spider.parser_version = load_parser(crawler.settings)
        spider.archive = load_object(
            crawler.settings["TRENDING_ARCHIVE_STORAGE"]).from_crawler(crawler)
        retention = crawler.settings.get("TRENDING_ARCHIVE_RETENTION")
        cutoff = retention_cutoff(None if retention is None else float(retention))
        if cutoff is not None:
            spider.archive.prune(cutoff)
        return spider

    def closed(self, reason: str) -> None:
        self.archive.close()

    def start_entries(self) -> list[tuple[str, str, str]]:
        return trending_entries(self.settings.getlist("TRENDING_LANGUAGES"),
                                self.settings.getlist("TRENDING_PERIODS"),
                                self.settings.getlist("TRENDING_SPOKEN_LANGUAGES"))

    def listing_url(self, language: str, period: str, spoken: str = "") -> str:
        path = f"/trending/{language}" if language else "/trending"
        query = {"since": period, **({"spoken_language_code": spoken} if spoken else {})}
        return f"{self.settings['GITHUB_WEB_URL']}{path}?{urlencode(query)}"

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for language, period, spoken in self.my_entries():
            yield scrapy.Request(
                self.listing_url(language, period, spoken),
                callback=self.parse,
                errback=self.request_failed,
                # A listing is re-read every round: never filtered as already seen.
                meta={"deltafetch_enabled": False, "period": period, "language": language,
                      "spoken": spoken},
                dont_filter=True,
            )

    def parse(self, response: Response, **kwargs: Any) -> Iterator[CollectedItem]:
        observed_at = now_ms()
        language, period, spoken = listing_of(response)
        cap = self.settings.getint("TRENDING_MAX_ROWS")
        elements = self.settings.getint("TRENDING_MAX_ELEMENTS")
        # Cut on the bytes, before any tree or decoded copy exists: a 15 MB page of cells
        # would otherwise build a gigabyte of tree to be thrown away.
        cut = cut_at_elements(response.body, elements)
        body = response.body if cut is None else cut
        text = body.decode(getattr(response, "encoding", None) or "utf-8", errors="replace")
        rows = self.parser(text, self.settings["GITHUB_WEB_URL"], max_rows=cap + 1)
        del text, body
        if cut is not None and len(rows) <= cap:
            self.crawler.stats.inc_value("trending/bad_responses")
            self.logger.error("trending page holds more than %d elements "
                              "(TRENDING_MAX_ELEMENTS; GitHub's has about 5,000): %s; parsed "
                              "only those, %d rows", elements, response.url, len(rows))
        if len(rows) > cap:  # GitHub serves 25: this is not a trending page
            self.crawler.stats.inc_value("trending/bad_responses")
            self.logger.error("trending page answered more than %d rows (TRENDING_MAX_ROWS; "
                              "GitHub serves 25): %s; kept the first %d", cap, response.url, cap)
            rows = rows[:cap]
        snapshot = snapshot_rows(rows)
        key, profile = list_key(period, language, spoken), parse_profile(snapshot)
        drift = drift_reason(profile, [p.profile for p in self.archive.recent(
            key, DRIFT_ROUNDS, observed_at)])
        page = ArchivedPage(url=response.url, observed_at=observed_at, status=response.status,
                            sha256=body_sha256(response.body), list_key=key,
                            parser_version=self.parser_version, profile=profile,
                            drifted=drift is not None)
        # Kept before anything is made of it: whatever the parser did, the page can be read
        # again, and the snapshot below names a body that exists.
        self.archive.put(page, response.body)
        if not rows:
            note_empty_listing(self.crawler.stats, response.url)
            if cut is None:  # a cut page has had its one ERROR line above
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
        yield self.stamp(TrendingPageItem(
            observed_at=observed_at, period=period, trending_language=language or ALL_LANGUAGES,
            spoken_language_code=spoken or None, url=response.url, rows=snapshot,
            archive_sha256=page.sha256, parser_version=page.parser_version,
            parsed_at=observed_at,
        ))
        for row in rows:
            yield self.stamp(TrendingRepoItem(
                full_name=row.full_name, owner=row.owner, name=row.name, url=row.url,
                description=row.description, language=row.language, stars=row.stars,
                forks=row.forks, period_stars=row.period_stars, period=period,
                trending_language=language or ALL_LANGUAGES, spoken_language_code=spoken or None,
                built_by=list(row.built_by), rank=row.rank,
            ))


def listing_of(response: Response) -> tuple[str, str, str]:
    """(language, period, spoken language) of a listing page: its request's, or read from the
    URL of one asked for by hand (``scrapy parse https://github.com/trending/python?since=weekly``)."""
    if "period" in response.meta:
        return response.meta["language"], response.meta["period"], response.meta.get("spoken", "")
    parts = urlsplit(response.url)
    language = parts.path.rstrip("/").removeprefix("/trending").lstrip("/")
    query = parse_qs(parts.query)
    return (language, query.get("since", ["daily"])[0],
            query.get("spoken_language_code", [""])[0])


def now_ms() -> str:
    """ISO-8601 UTC with milliseconds: two fetches of one list never share an instant."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
