"""``trending``: github.com/trending pages, one item per repository row, plus one snapshot
record per fetched page (every row as observed then, never deduplicated)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response

from scraper.config import trending_entries
from scraper.items import CollectedItem, TrendingPageItem, TrendingRepoItem
from scraper.outcome import note_empty_listing
from scraper.parsers.trending import parse_trending
from spiders.base import CollectorSpider


class TrendingSpider(CollectorSpider):
    name = "trending"

    def start_entries(self) -> list[tuple[str, str]]:
        return trending_entries(self.settings.getlist("TRENDING_LANGUAGES"),
                                self.settings.getlist("TRENDING_PERIODS"))

    def listing_url(self, language: str, period: str) -> str:
        path = f"/trending/{language}" if language else "/trending"
        return f"{self.settings['GITHUB_WEB_URL']}{path}?since={period}"

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for language, period in self.my_entries():
            yield scrapy.Request(
                self.listing_url(language, period),
                callback=self.parse,
                errback=self.request_failed,
                # A listing is re-read every round: never filtered as already seen.
                meta={"deltafetch_enabled": False, "period": period, "language": language},
                dont_filter=True,
            )

    def parse(self, response: Response, **kwargs: Any) -> Iterator[CollectedItem]:
        cap = self.settings.getint("TRENDING_MAX_ROWS")
        rows = parse_trending(response.text, self.settings["GITHUB_WEB_URL"], max_rows=cap + 1)
        if not rows:
            self.crawler.stats.inc_value("trending/empty_pages")
            note_empty_listing(self.crawler.stats, response.url)
            self.logger.error("trending page parsed to zero rows: %s (status %d)",
                              response.url, response.status)
            return
        if len(rows) > cap:  # GitHub serves 25: this is not a trending page
            self.crawler.stats.inc_value("trending/bad_responses")
            self.logger.error("trending page answered more than %d rows (TRENDING_MAX_ROWS; "
                              "GitHub serves 25): %s; kept the first %d", cap, response.url, cap)
            rows = rows[:cap]
        # Written before the rows: the rows may all be dropped as unchanged content, the
        # snapshot never is.
        yield self.stamp(TrendingPageItem(
            observed_at=_now_ms(), period=response.meta["period"],
            trending_language=response.meta["language"] or None, url=response.url,
            rows=[{"rank": row.rank, "full_name": row.full_name,
                   "description": row.description, "language": row.language,
                   "stars": row.stars, "forks": row.forks, "period_stars": row.period_stars,
                   "built_by": list(row.built_by)} for row in rows],
        ))
        for row in rows:
            yield self.stamp(TrendingRepoItem(
                full_name=row.full_name, owner=row.owner, name=row.name, url=row.url,
                description=row.description, language=row.language, stars=row.stars,
                forks=row.forks, period_stars=row.period_stars,
                period=response.meta["period"],
                trending_language=response.meta["language"] or None,
                built_by=list(row.built_by), rank=row.rank,
            ))


def _now_ms() -> str:
    """ISO-8601 UTC with milliseconds: two fetches of one list never share an instant."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
