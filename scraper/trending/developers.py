"""Parse GitHub's trending developers page (``/trending/developers``, ``…/developers/<language>``)
into rows.

Every capture from 2019 to 2026 (tests/data/trending_developers) has a row per developer as
``article.Box-row``, the login as the path of the heading link (its text the display name), the
avatar as an ``img`` whose ``alt`` is ``@login``, and the popular repository as an inner
``<article>`` whose heading links to ``/owner/name``, with the description in the element after
that heading. Utility classes changed with every redesign (``text-gray`` ->
``color-text-secondary`` -> ``color-fg-muted``), so none is relied on.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urljoin, urlsplit

from parsel import Selector

from scraper.trending.repositories import _text, parsed_rows, selector_of

__all__ = ["PARSER_VERSION", "DeveloperRow", "parse_developers"]

PARSER_VERSION = "1"
"""Recorded with every developers page it reads (snapshots, the page archive): raise it with
every change to what the parser returns."""

_ROW_CSS = "article.Box-row"
_HEADINGS = "self::h1 or self::h2 or self::h3 or self::h4"
# The developer's own heading: not the popular repository's, which sits in an inner <article>.
_OWN_HEADING_LINK_XPATH = (f".//*[{_HEADINGS}][not(ancestor::article[ancestor::article])]"
                           "//a[@href]")
_REPO_XPATH = ".//article"
_REPO_LINK_XPATH = f".//*[{_HEADINGS}]//a[@href]"
_REPO_DESCRIPTION_XPATH = f".//*[{_HEADINGS}][.//a]/following-sibling::*[1]"


@dataclass(frozen=True, slots=True)
class DeveloperRow:
    """One developer row of a trending developers page."""

    rank: int  # 1-based position among the parsed rows
    login: str
    name: str | None  # the display name; None when the page shows only the login
    url: str  # absolute: urljoin(base_url, "/login")
    avatar_url: str | None
    repo_full_name: str | None  # the "Popular repo" shown, owner/name; None when none is shown
    repo_description: str | None  # as the page shows it (GitHub cuts long ones with "…")


def parse_developers(html: str | bytes, base_url: str,
                     max_rows: int | None = None) -> list[DeveloperRow]:
    """Parse a trending developers page; returns [] when it holds no developer rows.

    Rows without a ``/login`` heading link are skipped, and ranks stay 1..n. Parsing stops
    after ``max_rows`` rows.
    """
    sel = selector_of(html)
    return [] if sel is None else parsed_rows(sel.css(_ROW_CSS), _parse_row, base_url, max_rows)


def _parse_row(node: Selector, rank: int, base_url: str) -> DeveloperRow | None:
    heading = next((link for link in node.xpath(_OWN_HEADING_LINK_XPATH)
                    if len(_path(link)) == 1), None)
    if heading is None:
        return None
    login = _path(heading)[0]
    repo_full_name = repo_description = None
    for inner in node.xpath(_REPO_XPATH)[:1]:
        link = next((a for a in inner.xpath(_REPO_LINK_XPATH) if len(_path(a)) == 2), None)
        if link is not None:
            repo_full_name = "/".join(_path(link))
            described = inner.xpath(_REPO_DESCRIPTION_XPATH)
            repo_description = (_text(described[0]) if described else "") or None
    return DeveloperRow(
        rank=rank, login=login, name=_name(node, heading, login),
        url=urljoin(base_url, f"/{login}"), avatar_url=_avatar(node, login),
        repo_full_name=repo_full_name, repo_description=repo_description)


def _name(node: Selector, heading: Selector, login: str) -> str | None:
    """The heading's text is the display name when the login is shown on a line of its own
    (a text link to the profile outside any heading); a developer without a display name
    has only the heading, which then shows the login."""
    shown = _text(heading)
    login_line = any(_path(link) == [login] and _text(link)
                     for link in node.xpath(f".//a[@href][not(ancestor::*[{_HEADINGS}])]"
                                            "[not(ancestor::article[ancestor::article])]"))
    return shown if shown and login_line else None


def _avatar(node: Selector, login: str) -> str | None:
    for img in node.xpath(".//img[@src]"):
        if img.attrib.get("alt", "").strip().lstrip("@") == login:
            return img.attrib["src"]
    return None


def _path(link: Selector) -> list[str]:
    return [unquote(p) for p in urlsplit(link.attrib["href"].strip()).path.split("/") if p]

