"""A docs site's sitemaps: where to look for them, and what one lists.

Read with Scrapy's own SitemapSpider machinery (``scrapy.utils.sitemap``): ``Sitemap`` for
``<urlset>`` and ``<sitemapindex>`` files, ``sitemap_urls_from_robots`` for robots.txt's
``Sitemap:`` lines, and ``scrapy.utils.gz`` for ``.xml.gz`` files, unpacked no further than a
size limit (a small gzip file can unpack to gigabytes).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from lxml import etree
from scrapy.http import Response, XmlResponse
from scrapy.utils.gz import gunzip, gzip_magic_number
from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots


@dataclass(frozen=True, slots=True)
class SitemapFile:
    kind: str  # "urlset" (pages) or "sitemapindex" (more sitemaps)
    urls: list[str]


def robots_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/robots.txt"


def sitemap_seeds(prefix: str) -> list[str]:
    """Where a site under ``prefix`` says where its pages are: its own ``sitemap.xml`` (what
    Sphinx's sitemap extension, MkDocs and Docusaurus write at the site's root) and robots.txt's
    ``Sitemap:`` lines (Read the Docs lists its host's sitemap there)."""
    return [f"{prefix}sitemap.xml", robots_url(prefix)]


def is_robots(url: str) -> bool:
    return urlsplit(url).path == "/robots.txt"


def robots_sitemaps(response: Response) -> list[str]:
    return list(sitemap_urls_from_robots(response.body, base_url=response.url))


def sitemap_body(response: Response, max_size: int) -> bytes | None:
    """The sitemap XML of a response: as served, or unpacked from gzip up to ``max_size``
    bytes; None when it is not a sitemap or unpacks to more."""
    if gzip_magic_number(response):
        try:
            return gunzip(response.body, max_size=max_size)
        except ValueError:  # too big unpacked, or not gzip after all
            return None
    path = urlsplit(response.url).path
    if isinstance(response, XmlResponse) or path.endswith((".xml", ".xml.gz")):
        return response.body
    return None


def read_sitemap(body: bytes) -> SitemapFile | None:
    """The URLs (``<loc>``) a sitemap or sitemap index lists, in its order; None when the body
    is neither."""
    try:
        sitemap = Sitemap(body)
        if sitemap.type not in ("urlset", "sitemapindex"):
            return None
        return SitemapFile(sitemap.type, list(_locs(sitemap)))
    except (etree.XMLSyntaxError, StopIteration):
        return None


def _locs(sitemap: Sitemap) -> Iterator[str]:
    for entry in sitemap:
        loc = entry.get("loc")
        if loc:
            yield loc
