"""Documentation pages: the main content as Markdown and text, its metadata, the links to follow."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urldefrag, urljoin, urlsplit

from lxml import etree
from parsel import Selector
from scrapy.linkextractors import IGNORED_EXTENSIONS

from scraper.parsers.markdown import classes, convert


def _has_class(name: str) -> str:
    return f"contains(concat(' ', normalize-space(@class), ' '), ' {name} ')"


# The main content, most specific first: a generator's own content container, where it has one
# that leaves its navigation out, then the generic landmarks.
MAIN_XPATHS = (
    f"//article[{_has_class('bd-article')}]",           # pydata-sphinx-theme
    f"//div[{_has_class('theme-doc-markdown')}]",       # Docusaurus
    f"//article[{_has_class('md-content__inner')}]",    # MkDocs Material
    f"//div[{_has_class('vp-doc')}]",                   # VitePress
    # Sphinx: RTD div.document, Furo article, alabaster's and docs.python.org's div.body
    "//*[@role='main']",
    "//main",
    "//article",
    "//body",
)
# Inside the main content, what is the site's furniture and not the page's: header anchors,
# breadcrumbs, version and language switchers, edit links, previous/next, footers, TOCs, copy
# buttons, feedback widgets, cookie banners (Sphinx themes, MkDocs Material, Docusaurus,
# VitePress, pydata, docs.python.org).
BOILERPLATE_CLASSES = frozenset({
    "headerlink", "header-anchor", "hash-link", "anchorjs-link",
    "breadcrumbs", "wy-breadcrumbs", "theme-doc-breadcrumbs", "bd-breadcrumbs",
    "rst-versions", "version-switcher__container", "version-switcher", "language-switcher",
    "theme-doc-version-badge", "theme-doc-version-banner", "version-warning",
    "md-content__button", "edit-link", "edit-this-page", "theme-edit-this-page",
    "content-icon-container", "md-source-file", "theme-last-updated", "last-updated", "lastupdated",
    "pagination-nav", "prev-next-area", "prev-next-footer", "related-pages", "prev-next",
    "VPDocFooter", "theme-doc-footer", "bd-footer-article", "footer-article",
    "theme-doc-toc-mobile", "theme-doc-toc-desktop", "toc-drawer", "bd-sidebar-secondary",
    "md-sidebar", "sphinxsidebar", "related", "md-feedback", "md-top",
    "copybtn", "copy", "copy-button", "lang",
})
BOILERPLATE_ROLES = frozenset({"navigation", "contentinfo", "banner", "search"})
# Generators' own "Last updated" lines, when the server sends no Last-Modified.
_LAST_UPDATED_XPATHS = (
    f"//*[{_has_class('theme-last-updated')}]//time/@datetime",  # Docusaurus
    f"//*[{_has_class('last-updated')}]//time/@datetime",  # VitePress
    "//span[contains(@class, 'git-revision-date-localized-plugin')]/text()",  # MkDocs
    f"//*[{_has_class('lastupdated')}]//text()",  # Sphinx html_last_updated_fmt (RTD, alabaster)
    f"//*[{_has_class('last-updated')}]//text()",  # Furo, pydata, others
)
# Compiled once: a page is a few ms of work, and XPath parsing was a tenth of it.
_MAIN = tuple(etree.XPath(f"({xpath})[1]") for xpath in MAIN_XPATHS)
_LAST_UPDATED = tuple(etree.XPath(xpath) for xpath in _LAST_UPDATED_XPATHS)
_LAST_UPDATED_ANY = etree.XPath(
    "boolean(//*[contains(@class, 'last') or contains(@class, 'git-revision')])")
_BASE = etree.XPath("string((//base/@href)[1])")
_CANONICAL = etree.XPath("string((//link[contains(concat(' ', normalize-space(@rel), ' '), "
                         "' canonical ')]/@href)[1])")
_LANG = etree.XPath("string((/html/@lang | /html/@xml:lang)[1])")
_TITLE = etree.XPath("string(//title)")
_LAST_UPDATED_PREFIX = re.compile(r"^\s*last\s+updated(?:\s+on)?\s*:?\s*", re.IGNORECASE)
# Sphinx's default html_last_updated_fmt ("%b %d, %Y") and the other usual ones.
_DATE_FORMATS = ("%b %d, %Y", "%B %d, %Y", "%Y-%m-%d", "%d %B %Y", "%d %b %Y")
_WHITESPACE = re.compile(r"\s+")
_IGNORED_SUFFIXES = tuple(f".{ext}" for ext in IGNORED_EXTENSIONS)


@dataclass(frozen=True, slots=True)
class DocPage:
    title: str | None
    headings: list[str]
    text: str
    markdown: str
    canonical_url: str | None
    lang: str | None
    last_modified: str | None


def _normalise(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def is_boilerplate(element: etree._Element) -> bool:
    if classes(element) & BOILERPLATE_CLASSES:
        return True
    if element.get("role") in BOILERPLATE_ROLES:
        return True
    label = (element.get("aria-label") or "").lower()
    return label == "breadcrumbs" or "cookie" in (element.get("id") or "").lower() or any(
        "cookie" in name.lower() for name in classes(element))


def main_content(selector: Selector) -> etree._Element | None:
    for xpath in _MAIN:
        found = xpath(selector.root)
        if found:
            return found[0]
    return None


def base_url(selector: Selector, page_url: str) -> str:
    base = _BASE(selector.root).strip()
    return urljoin(page_url, base) if base else page_url


def canonical_url(selector: Selector, page_url: str) -> str | None:
    href = _CANONICAL(selector.root).strip()
    return urljoin(page_url, href) if href else None


def page_lang(selector: Selector) -> str | None:
    lang = _LANG(selector.root).strip()
    return lang or None


def iso_utc(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def last_modified(selector: Selector, header: str | None) -> str | None:
    """The ``Last-Modified`` header as ISO-8601 UTC; else the generator's "Last updated": ISO-8601
    UTC from a ``<time datetime>``, an ISO date from a shown date, or the text as shown."""
    if header:
        try:
            return iso_utc(parsedate_to_datetime(header))
        except (TypeError, ValueError, IndexError):
            pass
    if not _LAST_UPDATED_ANY(selector.root):
        return None
    for xpath in _LAST_UPDATED:
        value = _normalise(" ".join(xpath(selector.root)))
        if not value:
            continue
        try:
            return iso_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            return shown_date(_LAST_UPDATED_PREFIX.sub("", value).rstrip(". ")) or None
    return None


def shown_date(value: str) -> str:
    """A date as a page shows it: ISO-8601 (``2026-07-26``) when it is a usual format, else as
    shown, so nothing the page says is lost."""
    for pattern in _DATE_FORMATS:
        try:
            return datetime.strptime(value, pattern).date().isoformat()
        except ValueError:
            continue
    return value


def extract_page(selector: Selector, page_url: str = "",
                 last_modified_header: str | None = None) -> DocPage:
    """Title, headings, text and Markdown of the page's main content, and its metadata."""
    title = _normalise(_TITLE(selector.root)) or None
    meta = (canonical_url(selector, page_url), page_lang(selector),
            last_modified(selector, last_modified_header))
    main = main_content(selector)
    if main is None:
        return DocPage(title, [], "", "", *meta)
    page = convert(main, base_url(selector, page_url), skip=is_boilerplate)
    return DocPage(title, page.headings, page.text, page.markdown, *meta)


def site_prefix(start_url: str) -> str:
    """The URL prefix a docs site lives under: its start URL up to the last ``/`` of the path."""
    url, _ = urldefrag(start_url)
    parts = urlsplit(url)
    path = parts.path or "/"
    directory = path[: path.rfind("/") + 1]
    return f"{parts.scheme}://{parts.netloc}{directory}"


def follow_links(selector: Selector, page_url: str, prefix: str) -> Iterator[str]:
    """Page links under ``prefix`` (same host, under the start path), fragments dropped,
    non-page files (images, archives, PDFs…) skipped, in page order; may repeat a URL.

    A generator over the tree, never a list: a page with 500,000 links costs what its caller
    takes, and the spider stops taking at ``max_pages_per_site``."""
    base = base_url(selector, page_url)
    for anchor in selector.root.iter("a"):
        href = (anchor.get("href") or "").strip()
        if not href or href.startswith(("#", "mailto:", "javascript:", "tel:")):
            continue
        url, _ = urldefrag(urljoin(base, href))
        if url.startswith(prefix) and not urlsplit(url).path.lower().endswith(_IGNORED_SUFFIXES):
            yield url
