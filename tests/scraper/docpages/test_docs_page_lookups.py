"""The page's main content, <base>, canonical link and version <meta> are found by ``iter(tag)``
(issue 37): each is what the XPath it replaced finds, on every real page and on the edge cases
of XPath's rules (whitespace in class and rel, attributes present but empty, nested matches)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urljoin

import pytest
from lxml import etree
from parsel import Selector

from scraper.docpages import extract
from scraper.docpages.extract import (
    MAIN_XPATHS,
    base_url,
    canonical_url,
    main_content,
    page_selector,
    page_version,
)

DATA = Path(__file__).parents[2] / "data"
PAGES = sorted((*(DATA / "docs").glob("*.html"), *(DATA / "generators").glob("*.html")))
NO_VERSION_URL = "http://docs.test/guide/page.html"

# What the lookups were, as XPaths, kept here as the reference.
MAIN = [etree.XPath(f"/descendant::{xpath.removeprefix('//')}[1]") for xpath in MAIN_XPATHS]
BASE = etree.XPath("string(/descendant::base[@href][1]/@href)")
CANONICAL = etree.XPath("string(/descendant::link[contains(concat(' ', normalize-space(@rel), "
                        "' '), ' canonical ')][@href][1]/@href)")
SWITCHER = etree.XPath("string((/html/@data-version | /descendant::meta[@name='docsearch:version'"
                       " or @name='version'][@content][1]/@content)[1])")

EDGES = [
    '<html><body><div class="x vp-doc\ty"><p>a</p></div></body></html>',
    '<html><body><div class="vp-doc\x0c"><p>a</p></div><main><p>b</p></main></body></html>',
    '<html><body><div class="vp-docs"><div class="VP-doc"></div></div><article/></body></html>',
    '<html><body><div role="main"><article class="bd-article"></article></div></body></html>',
    '<html><body><span role="main"><main></main></span></body></html>',
    '<html><body><div id="doc-content "></div><div id="doc-content"></div></body></html>',
    '<html><head><base href=""><base href=" /sub/ "><link rel="canonical">'
    '<link rel="\tcanonical\nalternate" href=" /c "></head><body></body></html>',
    '<html><head><link rel="canonicalx" href="/no"><link rel="Canonical" href="/no">'
    '</head><body><link rel="canonical" href="/in-body"></body></html>',
    '<html data-version=""><head><meta name="version" content="2"></head><body></body></html>',
    '<html><head><meta name="version"><meta name="docsearch:version" content=" 3.1 ">'
    '</head><body></body></html>',
    '<html><body><p>no head</p></body></html>',
    '<p>a fragment</p>',
    '<html><body><div id="doc-content" class="col-content"><div class="vp-doc"></div></div>'
    '<div class="theme-doc-markdown"></div><article class="bd-article"></article></body></html>',
    '<html><body><div id="doc-content" class="col-content"><div class="vp-doc"></div></div>'
    '<section class="markdown-section"></section></body></html>',
]


def reference(selector: Selector) -> tuple[etree._Element | None, str, str, str | None]:
    root = selector.root
    main = next((found[0] for xpath in MAIN if (found := xpath(root))), None)
    base = BASE(root).strip()
    href = CANONICAL(root).strip()
    return (main, base, href, extract._normalise(SWITCHER(root)) or None)


@pytest.mark.parametrize("html", [p.read_text(encoding="utf-8", errors="replace") for p in PAGES]
                         + EDGES, ids=[p.stem for p in PAGES] + [f"edge{i}" for i in
                                                                 range(len(EDGES))])
def test_each_lookup_finds_what_its_xpath_found(html: str) -> None:
    selector = page_selector(html)
    main, base, href, version = reference(selector)
    assert main_content(selector) is main
    assert base_url(selector, NO_VERSION_URL) == (urljoin(NO_VERSION_URL, base) if base
                                                  else NO_VERSION_URL)
    assert canonical_url(selector, NO_VERSION_URL) == (urljoin(NO_VERSION_URL, href) if href
                                                       else None)
    assert page_version(selector, NO_VERSION_URL) == version
