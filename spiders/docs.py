"""``docs``: documentation sites, followed link by link under each start URL's path, and seeded
with the pages their sitemaps list there."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from parsel import Selector
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from scraper.docpages.extract import extract_page, follow_links, page_in_site, page_selector
from scraper.docpages.sitemaps import (
    is_robots,
    read_sitemap,
    robots_sitemaps,
    sitemap_body,
    sitemap_seeds,
)
from scraper.docpages.sites import site_prefix
from scraper.items import DocPageItem
from scraper.utils.bounds import elements_over
from scraper.utils.ledger import LEDGER_META
from spiders.base import CollectorSpider, failed_request, http_status

MAX_LINKS_PER_PAGE = 5000
"""Links followed from one page: a generated index of 500,000 links must not cost a worker its
memory (a real docs index page has a few thousand)."""
MAX_SITEMAPS_PER_ROUND = 100
"""Sitemap files read per worker per round, robots.txt included: a sitemap index of 50,000
sitemaps must not cost a round more than the pages it may fetch."""
SITEMAP_SITES = "sitemap_sites"
"""Meta of a sitemap request: the sites (start URL prefixes) whose pages it may list."""


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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Per site: the URLs this round has asked for (the site cap's count).
        self.site_urls: dict[str, set[str]] = {}
        # Per sitemap (or robots.txt) URL: the sites it was asked for this round.
        self.sitemaps_asked: dict[str, set[str]] = {}

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

    ledger_kind = "site"

    def not_fetched(self, request: Any) -> None:
        # A page robots.txt refuses uses none of the site's pages this round: without this a
        # private link on every page would cost a page of the cap in every round.
        site = request.meta.get("site") if request is not None else None
        if site in self.site_urls:
            self.site_urls[site].discard(request.url)
            self.crawler.stats.inc_value("sitecap/refunded")

    async def start(self) -> AsyncIterator[scrapy.Request]:
        sitemaps: dict[str, list[str]] = {}
        for start_url in self.my_entries():
            prefix = site_prefix(start_url)
            self.site_urls.setdefault(prefix, set()).add(start_url)
            yield scrapy.Request(start_url, callback=self.parse, dont_filter=True,
                                 errback=self.request_failed,
                                 meta={"deltafetch_enabled": False, "site": prefix,
                                       LEDGER_META: start_url})
            for url in sitemap_seeds(prefix):
                sitemaps.setdefault(url, []).append(prefix)
        if self.settings.getbool("DOCS_SITEMAPS"):
            # After every start page: a site's first page never waits for its sitemaps.
            for url, sites in sitemaps.items():
                for request in self.sitemap_request(url, sites):
                    yield request

    def sitemap_request(self, url: str, sites: list[str]) -> Iterator[scrapy.Request]:
        """A request for a sitemap (or robots.txt) that may list pages of ``sites``: asked once
        per round for each site, however often it is named (robots.txt, indexes)."""
        asked = self.sitemaps_asked.get(url)
        new = [site for site in sites if (asked is None or site not in asked)
               and may_list(url, site)]
        if not new or (asked is None and len(self.sitemaps_asked) >= MAX_SITEMAPS_PER_ROUND):
            return
        self.sitemaps_asked.setdefault(url, set()).update(new)
        # "site": None: a sitemap is no page of a site, so the site cap does not count it.
        yield scrapy.Request(url, callback=self.parse_sitemap, errback=self.sitemap_failed,
                             dont_filter=True,
                             meta={"deltafetch_enabled": False, "site": None,
                                   SITEMAP_SITES: new,
                                   "download_maxsize": self.settings.getint(
                                       "DOCS_SITEMAP_MAXSIZE")})

    def parse_sitemap(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        """robots.txt's ``Sitemap:`` lines, a sitemap index's sitemaps, or
        a sitemap's pages under a site's start path: requested like the links of a page, so the
        site cap, this round's "asked" set and deltafetch apply to them alike."""
        sites: list[str] = response.meta[SITEMAP_SITES]
        stats = self.crawler.stats
        if is_robots(response.url):
            for url in robots_sitemaps(response):
                yield from self.sitemap_request(url, sites)
            return
        body = sitemap_body(response, self.settings.getint("DOCS_SITEMAP_MAXSIZE"))
        sitemap = read_sitemap(body) if body is not None else None
        if sitemap is None:
            stats.inc_value("docs/sitemaps/invalid")
            self.logger.warning("not a sitemap, ignored: %s", response.url)
            return
        stats.inc_value("docs/sitemaps/read")
        if sitemap.kind == "sitemapindex":
            for url in sitemap.urls:
                yield from self.sitemap_request(url, sites)
            return
        longest_first = sorted(sites, key=len, reverse=True)
        for loc in sitemap.urls:
            for site in longest_first:
                page = page_in_site(loc, site)
                if page is not None:
                    stats.inc_value("docs/sitemaps/pages")
                    yield scrapy.Request(page, callback=self.parse, errback=self.request_failed,
                                         meta={"site": site})
                    break

    def sitemap_failed(self, failure: Failure) -> None:
        """A site without a sitemap is usual, and one that cannot be read leaves link following
        to find the pages: one WARNING line, never an error of the round."""
        request = failed_request(failure)
        if http_status(failure) in (404, 410):
            self.crawler.stats.inc_value("docs/sitemaps/missing")
            return
        if failure.check(IgnoreRequest) and "robots.txt" in str(failure.value):
            self.crawler.stats.inc_value("docs/sitemaps/disallowed")
            return
        self.crawler.stats.inc_value("docs/sitemaps/failed")
        reason = next(iter(str(failure.value).splitlines()), "") or type(failure.value).__name__
        self.logger.warning("sitemap not read: %s: %s", request.url, reason[:300])

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        prefix = response.meta.get("site") or self.site_of(response.url)
        if not response.url.startswith(prefix):
            # Redirected off the site (another host, or outside the start URL's directory).
            self.crawler.stats.inc_value("docs/offsite_redirects")
            first = (response.meta.get("redirect_urls") or [response.url])[0]
            self.logger.error("not collected: %s redirects off the site %s to %s", first,
                              prefix, response.url)
            self.yielded_nothing(response, "redirected off the site",
                                 f"{first} -> {response.url}")
            return
        if not isinstance(response, TextResponse):
            self.crawler.stats.inc_value("docs/not_text")
            return
        limit = self.settings.getint("DOCS_MAX_ELEMENTS")
        elements = elements_over(response.body, limit)
        if elements is not None:
            self.crawler.stats.inc_value("docs/too_many_elements")
            self.logger.error("not collected: %s holds %d HTML elements, more than "
                              "DOCS_MAX_ELEMENTS (%d); its tree would not fit a worker's memory",
                              response.url, elements, limit)
            return
        # A tree of its own, not the cached response.selector: it is freed before this
        # callback yields, so responses waiting in the scraper never hold two trees at once.
        selector = page_selector(response.text)
        modified = response.headers.get(b"Last-Modified")
        page = extract_page(selector, response.url,
                            modified.decode("latin-1") if modified else None)
        fidelity = page.fidelity.fields()
        for name, count in fidelity.items():
            self.crawler.stats.inc_value(f"docs/{name}", count)
        new_urls = self.new_links(selector, response.url, prefix)
        del selector
        yield self.stamp(DocPageItem(
            url=response.url, title=page.title, headings=page.headings, text=page.text,
            markdown=page.markdown, canonical_url=page.canonical_url, lang=page.lang,
            last_modified=page.last_modified, version=page.version, **fidelity))
        for url in new_urls:
            yield scrapy.Request(url, callback=self.parse, errback=self.request_failed,
                                 meta={"site": prefix})

    def site_of(self, url: str) -> str:
        """The site of a page asked for by hand (``scrapy parse URL --spider docs``): the start
        URL's it falls under, else its own directory."""
        prefixes = [site_prefix(start) for start in self.start_entries()]
        site = max((p for p in prefixes if url.startswith(p)), key=len, default=site_prefix(url))
        self.site_urls.setdefault(site, set()).add(url)
        return site

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


def may_list(sitemap_url: str, site: str) -> bool:
    """Whether a sitemap can list pages of ``site``: the sitemap protocol lets one list only
    URLs under its own directory, so one elsewhere on the host, or on another host, cannot."""
    directory = site_prefix(sitemap_url)
    return site.startswith(directory) or directory.startswith(site)
