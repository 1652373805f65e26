"""``docs``: documentation sites, followed link by link under each start URL's path."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from parsel import Selector
from scrapy.http import Response, TextResponse

from scraper.items import DocPageItem
from scraper.parsers.docs import extract_page, follow_links, site_prefix
from spiders.base import CollectorSpider

MAX_LINKS_PER_PAGE = 5000
"""Links followed from one page: a generated index of 500,000 links must not cost a worker its
memory (a real docs index page has a few thousand)."""


class DocsSpider(CollectorSpider):
    name = "docs"
    custom_settings = {
        "ROBOTSTXT_OBEY": True,
        # A documentation page is HTML of tens to hundreds of KB; its parsed tree costs up to
        # 30× its size. 2 MB keeps one worker under 200 MB RSS on the densest page (README,
        # "Performance and sizing"); the project-wide 16 MB is for API answers.
        "DOWNLOAD_MAXSIZE": 2 * 1024 * 1024,
        "DOWNLOAD_WARNSIZE": 1024 * 1024,
    }

    @property
    def refresh_after(self) -> float:
        """Read by the deltafetch middleware: a stored page is fetched again after this long."""
        return self.settings.getfloat("DOCS_REFRESH_AFTER")

    @property
    def max_pages_per_site(self) -> int:
        """Read by the site cap middleware (scraper/spidermiddlewares/sitecap.py), which counts
        the round's pages in ``site_urls``."""
        return self.settings.getint("DOCS_MAX_PAGES_PER_SITE")

    def start_entries(self) -> list[str]:
        return self.settings.getlist("DOCS_START_URLS")

    def not_fetched(self, request: Any) -> None:
        # A page robots.txt refuses uses none of the site's pages this round: without this a
        # private link on every page would cost a page of the cap in every round.
        site = request.meta.get("site") if request is not None else None
        if site in self.site_urls:
            self.site_urls[site].discard(request.url)
            self.crawler.stats.inc_value("sitecap/refunded")

    async def start(self) -> AsyncIterator[scrapy.Request]:
        # Per site: the URLs this round has asked for (the site cap's count).
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
        # A tree of its own, not the cached response.selector: it is freed before this
        # callback yields, so responses waiting in the scraper never hold two trees at once.
        selector = Selector(text=response.text, type="html")
        modified = response.headers.get(b"Last-Modified")
        page = extract_page(selector, response.url,
                            modified.decode("latin-1") if modified else None)
        self.crawler.stats.inc_value("docs/code_blocks", page.code_blocks)
        self.crawler.stats.inc_value("docs/code_blocks_exact", page.code_blocks_exact)
        new_urls = self.new_links(selector, response.url, prefix)
        del selector
        yield self.stamp(DocPageItem(
            url=response.url, title=page.title, headings=page.headings, text=page.text,
            markdown=page.markdown, canonical_url=page.canonical_url, lang=page.lang,
            last_modified=page.last_modified, code_blocks=page.code_blocks,
            code_blocks_exact=page.code_blocks_exact, version=page.version))
        for url in new_urls:
            yield scrapy.Request(url, callback=self.parse, errback=self.request_failed,
                                 meta={"site": prefix})

    def new_links(self, selector: Selector, page_url: str, prefix: str) -> list[str]:
        """The page's links this round has not asked for yet, each once — also those past the
        site's cap: deltafetch stores them with this page, and what the cap
        (scraper/spidermiddlewares/sitecap.py) holds back this round is where a later round
        goes on. Reading stops at MAX_LINKS_PER_PAGE, so a page of 500,000 links costs no more
        than one of that many."""
        asked = self.site_urls[prefix]
        new: dict[str, None] = {}
        for url in follow_links(selector, page_url, prefix):
            if len(new) >= MAX_LINKS_PER_PAGE:
                break
            if url not in new and url not in asked:
                new[url] = None
        return list(new)
