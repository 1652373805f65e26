"""``docs``: documentation sites, followed link by link under each start URL's path."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse

from scraper.items import DocPageItem
from scraper.parsers.docs import extract_page, follow_links, site_prefix
from spiders.base import CollectorSpider


class DocsSpider(CollectorSpider):
    name = "docs"
    custom_settings = {"ROBOTSTXT_OBEY": True}

    @property
    def refresh_after(self) -> float:
        """Read by the deltafetch middleware: a stored page is fetched again after this long."""
        return self.config.docs.refresh_after

    async def start(self) -> AsyncIterator[scrapy.Request]:
        # Per site: the URLs this round has asked for, capped at max_pages_per_site.
        self.site_urls: dict[str, set[str]] = {}
        for start_url in self.my_entries():
            prefix = site_prefix(start_url)
            self.site_urls.setdefault(prefix, set()).add(start_url)
            yield scrapy.Request(start_url, callback=self.parse, dont_filter=True,
                                 errback=self.request_failed,
                                 meta={"deltafetch_enabled": False, "site": prefix})

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        prefix = response.meta["site"]
        if not response.url.startswith(prefix):
            # Redirected off the site (another host, or outside the start URL's directory).
            self.crawler.stats.inc_value("docs/offsite_redirects")
            first = (response.meta.get("redirect_urls") or [response.url])[0]
            self.logger.error("not collected: %s redirects off the site %s to %s", first,
                              prefix, response.url)
            return
        if not isinstance(response, TextResponse):
            self.crawler.stats.inc_value("docs/not_text")
            return
        modified = response.headers.get(b"Last-Modified")
        page = extract_page(response.selector, response.url,
                            modified.decode("latin-1") if modified else None)
        yield self.stamp(DocPageItem(
            url=response.url, title=page.title, headings=page.headings, text=page.text,
            markdown=page.markdown, canonical_url=page.canonical_url, lang=page.lang,
            last_modified=page.last_modified))
        asked = self.site_urls[prefix]
        for url in follow_links(response.selector, response.url, prefix):
            if url in asked:
                continue
            if len(asked) >= self.config.docs.max_pages_per_site:
                self.crawler.stats.inc_value("docs/site_page_cap_reached")
                break
            asked.add(url)
            yield scrapy.Request(url, callback=self.parse, errback=self.request_failed,
                                 meta={"site": prefix})
