"""Documentation pages: the visible main text, the headings and the links worth following."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin, urlsplit

from lxml import etree
from parsel import Selector
from scrapy.linkextractors import IGNORED_EXTENSIONS

# The main content, in the order documentation generators (Sphinx, MkDocs, Docusaurus) use.
MAIN_XPATHS = ("//main", "//*[@role='main']", "//article", "//body")
INVISIBLE = ("script", "style", "noscript", "template", "nav", "header", "footer", "svg",
             "form", "button")
_HEADINGS_XPATH = ".//*[self::h1 or self::h2 or self::h3 or self::h4]"
_WHITESPACE = re.compile(r"\s+")
_IGNORED_SUFFIXES = tuple(f".{ext}" for ext in IGNORED_EXTENSIONS)


@dataclass(frozen=True, slots=True)
class DocPage:
    title: str | None
    headings: list[str]
    text: str


def _normalise(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _visible_text(node: etree._Element) -> str:
    parts: list[str] = []

    def walk(element: etree._Element) -> None:
        tag = element.tag if isinstance(element.tag, str) else None
        if tag is not None and tag.lower() in INVISIBLE:
            return
        if tag is not None and element.text:
            parts.append(element.text)
        for child in element:
            walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(node)
    return _normalise(" ".join(parts))


def extract_page(selector: Selector) -> DocPage:
    """Title, headings and whitespace-normalised visible text of the page's main content."""
    main = None
    for xpath in MAIN_XPATHS:
        found = selector.xpath(xpath)
        if found:
            main = found[0].root
            break
    title = _normalise(selector.xpath("string(//title)").get() or "") or None
    if main is None:
        return DocPage(title, [], "")
    headings = [_normalise("".join(h.itertext())) for h in main.xpath(_HEADINGS_XPATH)]
    return DocPage(title, [h for h in headings if h], _visible_text(main))


def site_prefix(start_url: str) -> str:
    """The URL prefix a docs site lives under: its start URL up to the last ``/`` of the path."""
    url, _ = urldefrag(start_url)
    parts = urlsplit(url)
    path = parts.path or "/"
    directory = path[: path.rfind("/") + 1]
    return f"{parts.scheme}://{parts.netloc}{directory}"


def follow_links(selector: Selector, page_url: str, prefix: str) -> list[str]:
    """Page links under ``prefix`` (same host, under the start path), fragments dropped,
    non-page files (images, archives, PDFs…) skipped, each URL once, in page order."""
    base = selector.xpath("//base/@href").get()
    base_url = urljoin(page_url, base) if base else page_url
    links: dict[str, None] = {}
    for href in selector.xpath("//a/@href").getall():
        href = href.strip()
        if not href or href.startswith(("#", "mailto:", "javascript:", "tel:")):
            continue
        url, _ = urldefrag(urljoin(base_url, href))
        if url.startswith(prefix) and not urlsplit(url).path.lower().endswith(_IGNORED_SUFFIXES):
            links[url] = None
    return list(links)
