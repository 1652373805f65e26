"""Parse GitHub's trending page (``/trending``, ``/trending/<language>``) into rows.

The markup has shifted over the years (``ol.repo-list > li`` -> ``article.Box-row``,
``h1.h3`` -> ``h2.h3``, ``/stargazers.<repo>`` -> ``/stargazers``, ``/network/members`` ->
``/forks``), so fields are located by hrefs, itemprops and text rather than utility classes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import unquote, urljoin, urlsplit

from lxml import etree
from parsel import Selector
from parsel.csstranslator import HTMLTranslator

__all__ = ["PARSER_VERSION", "TrendingRow", "parse_trending"]

PARSER_VERSION = "1"
"""Recorded with every page it reads (page snapshots, the page archive): raise it with every
change to what the parser returns, so ``python -m runner reparse`` can say what read a page."""

_ROW_CSS = "article.Box-row"
_LEGACY_ROW_CSS = "ol.repo-list > li"
_HEADING_LINK_XPATH = ".//*[self::h1 or self::h2 or self::h3]//a[@href]"
# Text and links outside the description <p>, which may itself contain links and digits.
_META_TEXT_XPATH = ".//text()[not(ancestor::p)]"
_META_LINK_XPATH = ".//a[@href][not(ancestor::p)]"

# Compiled once, run on each row's lxml element: parsel's ``xpath``/``css`` compile their
# query at every call, and a row asks seven (benchmarks/pagecost.py). The CSS queries are
# parsel's own translation of them.
_HEADING_LINKS = etree.XPath(_HEADING_LINK_XPATH)
_META_TEXTS = etree.XPath(_META_TEXT_XPATH)
_META_LINKS = etree.XPath(_META_LINK_XPATH)
_ALL_TEXT = etree.XPath(".//text()")
_DESCRIPTION = etree.XPath(HTMLTranslator().css_to_xpath("p"))
_LANGUAGE = etree.XPath(HTMLTranslator().css_to_xpath('[itemprop="programmingLanguage"]'))
_AVATARS = etree.XPath(HTMLTranslator().css_to_xpath("a > img.avatar"))

_NUMBER_RE = re.compile(r"\d[\d,]*")
_PERIOD_RE = re.compile(r"\d[\d,]*\s+stars?\s+(?:today|this\s+week|this\s+month)", re.I)


@dataclass(frozen=True, slots=True)
class TrendingRow:
    """One repository row of a trending page."""

    rank: int  # 1-based position among the parsed rows
    full_name: str  # "owner/name"
    owner: str
    name: str
    url: str  # absolute: urljoin(base_url, "/owner/name")
    description: str | None  # whitespace-collapsed text; None when absent or empty
    language: str | None  # None when absent
    stars: int  # total stars; 0 when missing
    forks: int  # 0 when missing
    period_stars: int  # "N stars today|this week|this month"; 0 when missing
    built_by: list[str]  # avatar logins without "@", bots included, page order


def parse_trending(html: str | bytes, base_url: str,
                   max_rows: int | None = None) -> list[TrendingRow]:
    """Parse a trending page; returns [] when the page holds no repository rows.

    ``base_url`` is the page URL (e.g. ``response.url``); row URLs are resolved against it.
    Rows without a usable ``/owner/name`` heading link are skipped, and ranks stay 1..n.
    Parsing stops after ``max_rows`` rows: a page with thousands costs no more than that.
    """
    sel = selector_of(html)
    if sel is None:
        return []
    return parsed_rows(sel.css(_ROW_CSS) or sel.css(_LEGACY_ROW_CSS), _parse_row, base_url,
                       max_rows)


Row = TypeVar("Row")


def selector_of(html: str | bytes) -> Selector | None:
    """The page's tree, or None for a blank page."""
    if isinstance(html, bytes):
        html = html.decode("utf-8", errors="replace")
    return Selector(text=html) if html.strip() else None


def parsed_rows(nodes: Iterable[Selector], parse_row: Callable[..., Row | None], base_url: str,
                max_rows: int | None) -> list[Row]:
    """``parse_row`` of each node that is a row, ranked 1..n, at most ``max_rows``."""
    rows: list[Row] = []
    for node in nodes:
        row = parse_row(node, rank=len(rows) + 1, base_url=base_url)
        if row is not None:
            rows.append(row)
            if len(rows) == max_rows:
                break
    return rows


def _parse_row(node: Selector, rank: int, base_url: str) -> TrendingRow | None:
    """Build one row, or None when the row has no ``/owner/name`` heading link."""
    row = node.root
    repo = _repo_from_heading(row)
    if repo is None:
        return None
    owner, name = repo

    stars_text: str | None = None
    forks_text: str | None = None
    for link in _META_LINKS(row):
        path = urlsplit(link.get("href").strip()).path
        if stars_text is None and "/stargazers" in path:
            stars_text = _element_text(link)
        elif forks_text is None and ("/network" in path or path.rstrip("/").endswith("/forks")):
            forks_text = _element_text(link)

    period = _PERIOD_RE.search(" ".join(_META_TEXTS(row)))

    return TrendingRow(
        rank=rank,
        full_name=f"{owner}/{name}",
        owner=owner,
        name=name,
        url=urljoin(base_url, f"/{owner}/{name}"),
        description=_first_text(row, _DESCRIPTION) or None,
        language=_first_text(row, _LANGUAGE) or None,
        stars=_count(stars_text),
        forks=_count(forks_text),
        period_stars=_count(period.group() if period else None),
        built_by=_built_by(row),
    )


def _repo_from_heading(row: etree._Element) -> tuple[str, str] | None:
    """(owner, name) from the first heading link whose path is exactly ``/owner/name``."""
    for link in _HEADING_LINKS(row):
        parts = [unquote(p) for p in urlsplit(link.get("href").strip()).path.split("/") if p]
        if len(parts) == 2:
            return parts[0], parts[1]
    return None


def _built_by(row: etree._Element) -> list[str]:
    """Logins of the "Built by" avatars (alt="@login"; falls back to the link's last segment)."""
    logins: list[str] = []
    for img in _AVATARS(row):
        login = img.get("alt", "").strip().lstrip("@")
        if not login:
            href = img.getparent().get("href", "")
            login = urlsplit(href).path.rstrip("/").rpartition("/")[2]
        if login:
            logins.append(login)
    return logins


def _element_text(element: etree._Element) -> str:
    """``_text`` of an lxml element."""
    return " ".join("".join(_ALL_TEXT(element)).split())


def _first_text(row: etree._Element, query: etree.XPath) -> str:
    """``_element_text`` of the first match of ``query`` inside ``row``; "" when none."""
    found = query(row)
    return _element_text(found[0]) if found else ""


def _text(node: Selector) -> str:
    """All descendant text of ``node``, stripped, inner whitespace collapsed to one space."""
    return " ".join("".join(node.xpath(".//text()").getall()).split())


def _count(text: str | None) -> int:
    """First number in ``text`` with thousands commas removed ("12,345" -> 12345); 0 if none."""
    if not text:
        return 0
    match = _NUMBER_RE.search(text)
    return int(match.group().replace(",", "")) if match else 0
