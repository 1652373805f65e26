"""The items the collector writes, one class per spider.

Fields marked ``content=True`` are what an item *says*; the content hash is taken over them only,
so the same content collected again (another round, another rank, another URL) is one item.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, ClassVar
from urllib.parse import urlsplit

import scrapy
from scrapy import Field

from scraper.utils.versions import url_version


def ContentField(hashed: Callable[[Any, scrapy.Item], Any] | None = None, *,
                 unhashed_when_none: bool = False) -> Field:
    """A content field; ``hashed(value, item)``, if given, is what the hash takes of it.
    ``unhashed_when_none``: a field added later, left out of the hash while it is None, so
    the items of earlier versions keep their hashes (and are not written again)."""
    return Field(content=True, hashed=hashed, unhashed_when_none=unhashed_when_none)


ALL_LANGUAGES = ""
"""``trending_language`` of the lists of every language, in items as in the catalog, its
exports and feeds: the catalog keys lists by it, and SQLite keeps NULLs apart in a key."""


def all_languages_as_before(language: Any, item: scrapy.Item) -> Any:
    """Items of earlier versions wrote null for all languages: hashed the same, so they are
    not taken for new content (and written again) after an upgrade."""
    return language or None


def site_relative_links(markdown: Any, item: scrapy.Item) -> Any:
    """Markdown with links and images into the page's own origin written from ``/``: the same
    page on a mirror host (or a test server on another port) hashes the same, as for ``url``.
    Links into the page's own version (``/en/latest/…`` from a page under ``/en/latest/``) are
    written from that version's root, so ``/latest/`` and ``/stable/`` of one page, when they
    say the same, are one item."""
    url = item.get("url")
    if not isinstance(markdown, str) or not isinstance(url, str):
        return markdown
    version = url_version(url)
    if version is not None:
        root = version[1]
        markdown = markdown.replace(f"]({root}", "](@version/").replace(f"](<{root}",
                                                                         "](<@version/")
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}/"
    return markdown.replace(f"]({origin}", "](/").replace(f"](<{origin}", "](</")


class CollectedItem(scrapy.Item):
    """What every item carries besides its content."""

    spider = Field()
    shard = Field()          # "1/4"
    collected_at = Field()   # ISO-8601 UTC, "2026-11-29T15:01:02Z"
    content_hash = Field()   # sha256 hex over the content fields


class TrendingRepoItem(CollectedItem):
    full_name = ContentField()
    owner = ContentField()
    name = ContentField()
    url = ContentField()
    description = ContentField()
    language = ContentField()
    stars = ContentField()
    forks = ContentField()
    period_stars = ContentField()
    period = ContentField()
    trending_language = ContentField(all_languages_as_before)
    spoken_language_code = ContentField(unhashed_when_none=True)  # None: any spoken language
    built_by = ContentField()
    rank = Field()           # position on the page: changes without the repository changing


class TrendingPageItem(CollectedItem):
    """One fetched trending page, whole: the observations of every row on it at one instant.

    Never deduplicated (``deduplicate = False``): a row unchanged since the last round is still
    on the list, and the catalog's history needs that observation.
    """

    deduplicate: ClassVar[bool] = False
    observed_at = Field()    # ISO-8601 UTC with milliseconds: when this page was fetched
    period = ContentField()
    trending_language = ContentField(all_languages_as_before)
    spoken_language_code = ContentField(unhashed_when_none=True)  # None: any spoken language
    url = ContentField()
    rows = ContentField()    # [{rank, full_name, description, language, stars, forks,
    #                            period_stars, built_by}, …] in page order
    archive_sha256 = Field()  # the archived body this was read from (scraper/trending/archive.py)
    parser_version = Field()  # what read it (scraper.trending.repositories.PARSER_VERSION)
    parsed_at = Field()      # when it was read: observed_at, or the time of a reparse, which
    #                          supersedes an earlier reading of the same fetch in the catalog


class TrendingDeveloperItem(CollectedItem):
    """One row of a trending developers list (``/trending/developers``)."""

    login = ContentField()
    name = ContentField()    # display name; None when the page shows only the login
    url = ContentField()
    avatar_url = ContentField()
    repo_full_name = ContentField()    # the "Popular repo" shown, owner/name, or None
    repo_description = ContentField()  # as the page shows it
    period = ContentField()
    trending_language = ContentField(all_languages_as_before)
    rank = Field()


class TrendingDeveloperPageItem(CollectedItem):
    """One fetched trending developers page, whole (like :class:`TrendingPageItem`, never
    deduplicated). Its rows are under ``developers``, so a catalog of any version tells it
    from a repository page's snapshot (``rows``)."""

    deduplicate: ClassVar[bool] = False
    observed_at = Field()
    period = ContentField()
    trending_language = ContentField(all_languages_as_before)
    url = ContentField()
    developers = ContentField()  # [{rank, login, name, avatar_url, repo_full_name,
    #                               repo_description}, …] in page order
    archive_sha256 = Field()
    parser_version = Field()  # scraper.trending.developers.PARSER_VERSION
    parsed_at = Field()


class SearchRepoItem(CollectedItem):
    query = ContentField()
    id = ContentField()
    full_name = ContentField()
    html_url = ContentField()
    description = ContentField()
    language = ContentField()
    stargazers_count = ContentField()
    forks_count = ContentField()
    open_issues_count = ContentField()
    topics = ContentField()
    license = ContentField()  # SPDX id, e.g. "MIT", or None
    created_at = ContentField()
    updated_at = ContentField()
    pushed_at = ContentField()
    archived = ContentField()
    slice = Field()  # the stars:/created: slice it was found in; None = the query itself


class DocPageItem(CollectedItem):
    url = Field()            # not content: one page under two URLs (mirrors) is one item
    title = ContentField()
    headings = ContentField()
    markdown = ContentField(site_relative_links)  # the main content as GitHub-flavoured Markdown
    # Derived from the same tree as markdown, which says all it says and more (code blocks'
    # whitespace): hashing it too would add nothing.
    text = Field()
    canonical_url = Field()  # <link rel="canonical">, like url not content
    lang = Field()           # <html lang>
    last_modified = Field()  # changes without the content changing (a redeploy)
    version = Field()  # the version the page documents: its URL's, or its version switcher's
    # What markdown keeps of what the content shows, per form: code blocks and those held
    # byte-exact, tab panels and those under their labels, tables and those with every cell
    # under its header, callouts and those under their titles (scraper/docpages/fidelity.py,
    # read from the tree on its own, not from the converter's walk).
    code_blocks = Field()
    code_blocks_exact = Field()
    tabs = Field()
    tabs_labelled = Field()
    tables = Field()
    tables_kept = Field()
    callouts = Field()
    callouts_kept = Field()


def is_deduplicated(item: Any) -> bool:
    """False for records the content-hash dedup must pass through (page snapshots)."""
    return getattr(item, "deduplicate", True)


def content_fields(item: scrapy.Item) -> list[str]:
    return sorted(name for name, meta in item.fields.items() if meta.get("content"))


def content_hash(item: scrapy.Item) -> str:
    """sha256 of the item's content fields, as canonical JSON (sorted keys, no spaces)."""
    content: dict[str, Any] = {}
    for name in content_fields(item):
        meta = item.fields[name]
        value = item.get(name)
        if value is None and meta.get("unhashed_when_none"):
            continue
        hashed = meta.get("hashed")
        content[name] = hashed(value, item) if hashed else value
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
