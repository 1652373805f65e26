"""One trending page read into the records the collector keeps: the same for a page just
fetched (the spider) and for an archived one read again (``python -m runner reparse``), so a
re-parse writes exactly what a spider with that parser would have written.

Two kinds of page: the repository lists (``/trending/{language}``) and the developer lists
(``/trending/developers/{language}``), each with its own parser setting, rows and items.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

from scraper.items import (
    ALL_LANGUAGES,
    CollectedItem,
    TrendingDeveloperItem,
    TrendingDeveloperPageItem,
    TrendingPageItem,
    TrendingRepoItem,
)
from scraper.trending.archive import ParseProfile
from scraper.trending.drift import DEVELOPER_FIELDS, REPOSITORY_FIELDS
from scraper.utils.bounds import cut_at_elements

Parser = Callable[..., list[Any]]

REPOSITORIES = "repositories"
DEVELOPERS = "developers"
_DEVELOPERS_PREFIX = f"{DEVELOPERS}:"


@dataclass(frozen=True, slots=True)
class PageKind:
    """What differs between a repository list and a developer list."""

    name: str
    parser_setting: str
    rows_field: str  # the snapshot record's field holding the rows
    drift_fields: tuple[tuple[str, str], ...]
    # (with_language, with_stars, with_description) of ParseProfile, per row
    counted: Callable[[dict[str, Any]], tuple[Any, Any, Any]]


KINDS = {
    REPOSITORIES: PageKind(REPOSITORIES, "TRENDING_PARSER", "rows", REPOSITORY_FIELDS,
                           lambda r: (r["language"], r["stars"], r["description"])),
    DEVELOPERS: PageKind(DEVELOPERS, "TRENDING_DEVELOPERS_PARSER", "developers",
                         DEVELOPER_FIELDS,
                         lambda r: (r["name"], r["repo_full_name"], r["repo_description"])),
}


def load_parser(settings: BaseSettings, kind: str = REPOSITORIES) -> tuple[Parser, str]:
    """The kind's parser (``TRENDING_PARSER``, ``TRENDING_DEVELOPERS_PARSER``) and its version
    (its module's ``PARSER_VERSION``)."""
    parser = load_object(settings[KINDS[kind].parser_setting])
    version = getattr(sys.modules[parser.__module__], "PARSER_VERSION", "unversioned")
    return parser, str(version)


def list_key(period: str, language: str, spoken: str, kind: str = REPOSITORIES) -> str:
    """The list a page is: ``daily|python|en`` (empty parts: all languages, any spoken), or
    ``developers:daily|python`` (developer lists have no spoken-language filter)."""
    if kind == DEVELOPERS:
        return f"{_DEVELOPERS_PREFIX}{period}|{language}"
    return f"{period}|{language}|{spoken}"


def parse_list_key(key: str) -> tuple[str, str, str, str]:
    """(kind, period, language, spoken language) of a :func:`list_key`."""
    if key.startswith(_DEVELOPERS_PREFIX):
        period, language = key.removeprefix(_DEVELOPERS_PREFIX).split("|")
        return DEVELOPERS, period, language, ""
    period, language, spoken = key.split("|")
    return REPOSITORIES, period, language, spoken


def read_rows(parser: Parser, body: bytes, encoding: str | None, base_url: str,
              max_rows: int, max_elements: int) -> tuple[list[Any], bool]:
    """(rows, whether the page was cut): the page is cut on its bytes at ``max_elements`` start
    tags before any tree or decoded copy exists (a 15 MB page of cells would otherwise build a
    gigabyte of tree to be thrown away), then parsed, at most ``max_rows`` rows. The spider and
    ``reparse`` both read through here, so an archived hostile page is bounded alike."""
    cut = cut_at_elements(body, max_elements)
    was_cut = cut is not None
    text = (body if cut is None else cut).decode(encoding or "utf-8", errors="replace")
    del cut
    return parser(text, base_url, max_rows=max_rows), was_cut


def snapshot_rows(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """A repository page's rows as its snapshot record holds them."""
    return [{"rank": row.rank, "full_name": row.full_name, "description": row.description,
             "language": row.language, "stars": row.stars, "forks": row.forks,
             "period_stars": row.period_stars, "built_by": list(row.built_by)}
            for row in rows]


def developer_snapshot_rows(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """A developer page's rows as its snapshot record holds them."""
    return [{"rank": row.rank, "login": row.login, "name": row.name,
             "avatar_url": row.avatar_url, "repo_full_name": row.repo_full_name,
             "repo_description": row.repo_description} for row in rows]


def snapshot_of(kind: str, rows: Sequence[Any]) -> list[dict[str, Any]]:
    return developer_snapshot_rows(rows) if kind == DEVELOPERS else snapshot_rows(rows)


def parse_profile(rows: list[dict[str, Any]], kind: str = REPOSITORIES) -> ParseProfile:
    canonical = json.dumps(rows, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    counted = [KINDS[kind].counted(row) for row in rows]
    return ParseProfile(
        rows=len(rows),
        with_language=sum(1 for c in counted if c[0]),
        with_stars=sum(1 for c in counted if c[1]),
        with_description=sum(1 for c in counted if c[2]),
        rows_hash=hashlib.sha256(canonical.encode()).hexdigest())


def page_item(kind: str, *, observed_at: str, period: str, language: str, spoken: str,
              url: str, rows: list[dict[str, Any]], archive_sha256: str, parser_version: str,
              parsed_at: str) -> CollectedItem:
    """The page snapshot record of one fetch: the same from the spider and from reparse."""
    common = {"observed_at": observed_at, "period": period,
              "trending_language": language or ALL_LANGUAGES, "url": url,
              "archive_sha256": archive_sha256, "parser_version": parser_version,
              "parsed_at": parsed_at}
    if kind == DEVELOPERS:
        return TrendingDeveloperPageItem(**common, developers=rows)
    return TrendingPageItem(**common, spoken_language_code=spoken or None, rows=rows)


def row_items(kind: str, rows: Sequence[Any], period: str, language: str,
              spoken: str) -> list[CollectedItem]:
    """The row items of one page (deduplicated by content, unlike the snapshot)."""
    if kind == DEVELOPERS:
        return [TrendingDeveloperItem(
            login=row.login, name=row.name, url=row.url, avatar_url=row.avatar_url,
            repo_full_name=row.repo_full_name, repo_description=row.repo_description,
            period=period, trending_language=language or ALL_LANGUAGES, rank=row.rank)
            for row in rows]
    return [TrendingRepoItem(
        full_name=row.full_name, owner=row.owner, name=row.name, url=row.url,
        description=row.description, language=row.language, stars=row.stars,
        forks=row.forks, period_stars=row.period_stars, period=period,
        trending_language=language or ALL_LANGUAGES, spoken_language_code=spoken or None,
        built_by=list(row.built_by), rank=row.rank) for row in rows]
