"""Sitemap seeding's rules, in-process: the docs spider (Scrapy's ``get_crawler``, the project's
settings) reading robots.txt, sitemap indexes and sitemaps handed to it as responses. The real
``scrapy crawl docs`` against the fake host is tests/e2e/test_crawl_docs.py's
``test_sitemaps_seed_the_crawl_with_pages_no_link_reaches``."""

from __future__ import annotations

import asyncio
import gzip
import logging
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, Response, TextResponse, XmlResponse
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from scraper.config.collector import ConfigError, parse_config
from scraper.spidermiddlewares.sitecap import SitePageCap
from spiders.docs import MAX_SITEMAPS_PER_ROUND, SITEMAP_SITES, DocsSpider
from tests.support.incrawler import MEMORY, project_crawler

HOST = "https://docs.example.org"
SITE = f"{HOST}/guide/"
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def spider(**settings: Any) -> DocsSpider:
    crawler = project_crawler(DocsSpider, **{"DOCS_START_URLS": [f"{SITE}index.html"],
                                             **MEMORY, **settings})
    return crawler.spider


def starts(docs: DocsSpider) -> list[Request]:
    async def take() -> list[Request]:
        return [request async for request in docs.start()]
    return asyncio.run(take())


def urlset(*locs: str) -> bytes:
    return (f"<?xml version='1.0'?><urlset {NS}>"
            + "".join(f"<url><loc>{loc}</loc></url>" for loc in locs) + "</urlset>").encode()


def index(*locs: str) -> bytes:
    return (f"<?xml version='1.0'?><sitemapindex {NS}>"
            + "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
            + "</sitemapindex>").encode()


def answer(request: Request, body: bytes, cls: type[Response] = XmlResponse) -> Response:
    return cls(request.url, body=body, request=request)


def sitemap_of(docs: DocsSpider, url: str, sites: list[str] | None = None) -> Request:
    return next(docs.sitemap_request(url, sites or [SITE]))


def test_start_asks_for_the_sites_sitemap_and_robots_txt_after_its_pages() -> None:
    docs = spider()
    requests = starts(docs)
    assert [r.url for r in requests] == [f"{SITE}index.html", f"{SITE}sitemap.xml",
                                         f"{HOST}/robots.txt"]
    for request in requests[1:]:
        assert request.callback == docs.parse_sitemap
        assert request.meta[SITEMAP_SITES] == [SITE]
        assert request.meta["site"] is None  # no page of the site: the cap does not count it
        assert request.meta["deltafetch_enabled"] is False
    assert [r.url for r in starts(spider(DOCS_SITEMAPS=False))] == [f"{SITE}index.html"]


def test_sites_of_one_host_share_its_robots_txt() -> None:
    docs = spider(DOCS_START_URLS=[f"{HOST}/a/", f"{HOST}/b/"])
    robots = [r for r in starts(docs) if r.url.endswith("/robots.txt")]
    assert len(robots) == 1 and robots[0].meta[SITEMAP_SITES] == [f"{HOST}/a/", f"{HOST}/b/"]


def test_a_sitemaps_pages_under_the_start_path_are_requested_as_pages() -> None:
    docs = spider()
    request = sitemap_of(docs, f"{HOST}/sitemap.xml")
    body = urlset(f"{SITE}intro.html", f"{SITE}intro.html#part", f"{SITE}api/ref.html",
                  f"{HOST}/blog/post.html", "https://other.example.org/guide/x.html",
                  f"{SITE}manual.pdf", f"{SITE}img/logo.png")
    pages = list(docs.parse_sitemap(answer(request, body)))
    assert [(r.url, r.callback, r.meta["site"]) for r in pages] == [
        (f"{SITE}intro.html", docs.parse, SITE), (f"{SITE}intro.html", docs.parse, SITE),
        (f"{SITE}api/ref.html", docs.parse, SITE)]
    assert docs.crawler.stats.get_value("docs/sitemaps/read") == 1


def test_a_page_goes_to_the_deepest_site_it_is_under() -> None:
    docs = spider()
    request = sitemap_of(docs, f"{HOST}/sitemap.xml", [f"{HOST}/", SITE])
    pages = list(docs.parse_sitemap(answer(request, urlset(f"{SITE}a.html", f"{HOST}/b.html"))))
    assert [(r.url, r.meta["site"]) for r in pages] == [(f"{SITE}a.html", SITE),
                                                        (f"{HOST}/b.html", f"{HOST}/")]


def test_the_site_cap_and_this_rounds_asked_pages_apply_to_sitemap_pages() -> None:
    docs = spider(DOCS_MAX_PAGES_PER_SITE=3)
    starts(docs)  # the start page is the first of the cap's 3
    request = sitemap_of(docs, f"{HOST}/other-sitemap.xml")
    body = urlset(f"{SITE}index.html", f"{SITE}a.html", f"{SITE}a.html", f"{SITE}b.html",
                  f"{SITE}c.html")
    cap = SitePageCap.from_crawler(docs.crawler)

    async def admitted() -> list[str]:
        async def output():
            for element in docs.parse_sitemap(answer(request, body)):
                yield element
        return [r.url async for r in cap.process_spider_output(answer(request, body), output())]

    assert asyncio.run(admitted()) == [f"{SITE}a.html", f"{SITE}b.html"]
    assert docs.crawler.stats.get_value("sitecap/held_back") == 1


def test_robots_txt_sitemap_lines_and_an_index_lead_to_the_sitemaps_that_may_list_the_site(
        ) -> None:
    docs = spider()
    robots = sitemap_of(docs, f"{HOST}/robots.txt")
    lines = (b"User-agent: *\nDisallow: /private/\nSitemap: /sitemap_index.xml\n"
             b"sitemap: https://cdn.example.net/sitemap.xml\n")
    found = list(docs.parse_sitemap(answer(robots, lines, TextResponse)))
    # Another host's sitemap can list no page of this site (the sitemap protocol's rule).
    assert [r.url for r in found] == [f"{HOST}/sitemap_index.xml"]
    body = index(f"{SITE}sitemap-1.xml.gz", f"{HOST}/sitemap-2.xml",
                 f"{HOST}/blog/sitemap.xml", f"{SITE}sitemap-1.xml.gz")
    children = list(docs.parse_sitemap(answer(found[0], body)))
    assert [r.url for r in children] == [f"{SITE}sitemap-1.xml.gz", f"{HOST}/sitemap-2.xml"]
    assert all(r.callback == docs.parse_sitemap for r in children)


def test_each_sitemap_is_asked_once_per_site_and_the_round_reads_a_bounded_number() -> None:
    docs = spider()
    assert len(list(docs.sitemap_request(f"{HOST}/sitemap.xml", [SITE]))) == 1
    assert list(docs.sitemap_request(f"{HOST}/sitemap.xml", [SITE])) == []
    again = list(docs.sitemap_request(f"{HOST}/sitemap.xml", [SITE, f"{HOST}/api/"]))
    assert [r.meta[SITEMAP_SITES] for r in again] == [[f"{HOST}/api/"]]
    for number in range(MAX_SITEMAPS_PER_ROUND + 10):
        list(docs.sitemap_request(f"{SITE}sitemap-{number}.xml", [SITE]))
    assert len(docs.sitemaps_asked) == MAX_SITEMAPS_PER_ROUND


def test_gzip_sitemaps_are_unpacked_within_the_size_limit(caplog) -> None:
    docs = spider(DOCS_SITEMAP_MAXSIZE=4096)
    request = sitemap_of(docs, f"{SITE}sitemap.xml.gz")
    small = gzip.compress(urlset(f"{SITE}a.html"))
    assert [r.url for r in docs.parse_sitemap(answer(request, small, Response))] == [
        f"{SITE}a.html"]
    bomb = gzip.compress(urlset(*(f"{SITE}{n}.html" for n in range(1000))))
    assert len(bomb) < 4096
    with caplog.at_level(logging.WARNING):
        assert list(docs.parse_sitemap(answer(request, bomb, Response))) == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        f"not a sitemap, ignored: {SITE}sitemap.xml.gz"]


@pytest.mark.parametrize("body", [b"", b"<html><body>Not found</body></html>",
                                  b"<?xml version='1.0'?><rss><channel/></rss>", b"\x00\xff"])
def test_what_is_no_sitemap_is_one_warning(body: bytes, caplog) -> None:
    docs = spider()
    request = sitemap_of(docs, f"{SITE}sitemap.xml")
    with caplog.at_level(logging.WARNING):
        assert list(docs.parse_sitemap(answer(request, body, HtmlResponse))) == []
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1
    assert docs.crawler.stats.get_value("docs/sitemaps/invalid") == 1


def test_a_missing_sitemap_is_quiet_and_an_unreadable_one_a_warning(caplog) -> None:
    docs = spider()
    request = sitemap_of(docs, f"{SITE}sitemap.xml")
    missing = Failure(HttpError(Response(request.url, status=404, request=request)))
    missing.request = request
    broken = Failure(ConnectionRefusedError("Connection was refused by other side: 111"))
    broken.request = request
    with caplog.at_level(logging.INFO):
        docs.sitemap_failed(missing)
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        docs.sitemap_failed(broken)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [f"sitemap not read: {SITE}sitemap.xml: Connection was refused by "
                        "other side: 111"]
    stats = docs.crawler.stats
    assert (stats.get_value("docs/sitemaps/missing"), stats.get_value("docs/sitemaps/failed"),
            stats.get_value("docs/failed_requests")) == (1, 1, None)


def test_the_config_key_turns_it_off_and_takes_a_boolean_only() -> None:
    assert parse_config("spiders: {docs: {sitemaps: false}}", "c.yaml").docs.sitemaps is False
    assert parse_config("", "c.yaml").docs.sitemaps is True
    with pytest.raises(ConfigError) as error:
        parse_config("spiders: {docs: {sitemaps: maybe}}", "c.yaml")
    assert "spiders.docs.sitemaps" in str(error.value) and "true or false" in str(error.value)
    assert "\n" not in str(error.value)
