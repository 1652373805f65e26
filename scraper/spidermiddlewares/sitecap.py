"""``max_pages_per_site``: at most that many pages of a site are fetched per round.

The cap sits after URL-level dedup in the spider output (closer to the engine than deltafetch),
so only a page that is about to be fetched counts: pages collected before are skipped first and
never use up a round's budget. A link the cap holds back is not lost: deltafetch stored it with
the page that found it (every link of the page, held back or not), and the next round reaches it
again through that page — fetched anew, or skipped and its links replayed — so a site of any
size is covered over enough rounds, each fetching at most the cap; a round cut short (a stop, a
kill, a full disk) leaves its tail the same way.

A request takes part when its meta names its ``site`` and the spider has
``max_pages_per_site``; the spider's ``site_urls`` (site → URLs asked this round) is the
round's count: a set per worker on one machine, a Redis set for the cluster in the distributed
mode. A URL asked already this round is dropped here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

SITE_META = "site"


class SitePageCap:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitePageCap:
        return cls(crawler)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]
                                    ) -> AsyncIterator[Any]:
        async for element in result:
            if isinstance(element, Request) and not self.admit(element):
                continue
            yield element

    def admit(self, request: Request) -> bool:
        spider = self.crawler.spider
        site = request.meta.get(SITE_META)
        cap: int | None = getattr(spider, "max_pages_per_site", None)
        site_urls: dict[str, set[str]] | None = getattr(spider, "site_urls", None)
        if site is None or cap is None or site_urls is None:
            return True
        asked = site_urls.setdefault(site, set())
        if request.url in asked:
            return False
        if len(asked) >= cap:
            self.stats.inc_value("sitecap/held_back")
            return False
        asked.add(request.url)
        return True
