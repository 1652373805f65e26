"""Atom feeds: ``{data_dir}/feeds/trending-{period}-{language or all}.atom`` (and
``…-{spoken language}.atom`` for a list of one spoken language), one entry per repository newly
on that trending list, rewritten from the catalog after each build.

Written with feedgen (the ``feeds`` extra): a maintained library that gets Atom's required
elements and escaping right, on lxml, which Scrapy already brings. It is an extra rather than a
core dependency because the collector runs without it; the build then says once how to get
feeds. A feed's content depends on the catalog only (``updated`` is its newest entry, never
"now"), so an unchanged list rewrites the same file, and each file is replaced atomically.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from runner.catalog.queries import NEW_DEVELOPER_ON_LIST, NEW_ON_LIST
from scraper.utils.layout import DataLayout

FEED_ENTRIES = 50
"""The newest arrivals per feed: readers poll often, the catalog keeps the rest."""
FEEDS_HINT = "feeds not written: feedgen is not installed (pip install -e '.[feeds]')"


def feed_name(period: str, language: str, spoken: str = "") -> str:
    return f"trending-{period}-{language or 'all'}{f'-{spoken}' if spoken else ''}.atom"


def developer_feed_name(period: str, language: str) -> str:
    return f"trending-developers-{period}-{language or 'all'}.atom"


def write_feeds(conn: Any, layout: DataLayout, web_url: str, *,
                warn: Callable[[str], None]) -> list[Path]:
    """Rewrite every trending list's feed; returns the files written."""
    lists = conn.execute("SELECT period, trending_language, spoken_language_code "
                         "FROM trending_lists ORDER BY 1, 2, 3").fetchall()
    developer_lists = conn.execute("SELECT period, trending_language "
                                   "FROM trending_developer_lists ORDER BY 1, 2").fetchall()
    if not lists and not developer_lists:
        return []
    if importlib.util.find_spec("feedgen") is None:
        warn(FEEDS_HINT)
        return []
    directory = layout.feeds_dir
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for period, language, spoken in lists:
        entries = conn.execute(NEW_ON_LIST, {"period": period, "language": language,
                                             "spoken": spoken, "limit": FEED_ENTRIES}).fetchall()
        path = directory / feed_name(period, language, spoken)
        _replace(path, render_feed(period, language, entries, web_url, spoken))
        written.append(path)
    for period, language in developer_lists:
        entries = conn.execute(NEW_DEVELOPER_ON_LIST, {"period": period, "language": language,
                                                       "limit": FEED_ENTRIES}).fetchall()
        path = directory / developer_feed_name(period, language)
        _replace(path, render_developer_feed(period, language, entries, web_url))
        written.append(path)
    return written


def _feed(urn: str, label: str, what: str, list_url: str, self_name: str) -> Any:
    """A list's feed, before its entries."""
    from feedgen.feed import FeedGenerator

    feed = FeedGenerator()
    feed.id(urn)
    feed.title(f"New on GitHub {label}")
    feed.subtitle(f"{what} newly on the GitHub {label} list, as hubcollect saw them")
    feed.author({"name": "hubcollect"})
    feed.link(href=list_url, rel="alternate")
    # Relative: the feed's own name, resolved against wherever it is served from (RFC 4287
    # allows a reference; a reader that subscribes knows the URL it fetched).
    feed.link(href=self_name, rel="self")
    feed.language("en")
    return feed


def _entry(feed: Any, urn: str, title: str, link: str, first_seen: str, summary: str) -> None:
    entry = feed.add_entry()
    entry.id(urn)
    entry.title(title)
    entry.link(href=link, rel="alternate")
    entry.updated(first_seen)
    entry.published(first_seen)
    entry.summary(summary)


def render_feed(period: str, language: str, entries: list[tuple[Any, ...]],
                web_url: str, spoken: str = "") -> bytes:
    label = f"{period} trending, {language or 'all languages'}"
    list_id = quote(language or 'all', safe='')
    query = f"?since={period}"
    if spoken:  # lists of any spoken language keep the ids of earlier versions
        label += f", spoken language {spoken}"
        list_id += f":{spoken}"
        query += f"&spoken_language_code={spoken}"
    list_url = f"{web_url}/trending/{language}" if language else f"{web_url}/trending"
    feed = _feed(f"urn:hubcollect:trending:{period}:{list_id}", label, "Repositories",
                 f"{list_url}{query}", feed_name(period, language, spoken))
    # Newest first in the feed: feedgen writes entries in reverse order of adding.
    for full_name, first_seen, best_rank, stars, description, repo_language, rank in \
            reversed(entries):
        details = [f"{stars:,} stars" if stars is not None else None, repo_language]
        summary = " · ".join(x for x in details if x)
        _entry(feed, f"urn:hubcollect:trending:{period}:{list_id}:{full_name}:{first_seen}",
               f"{full_name} is on {label} (#{rank or best_rank})", f"{web_url}/{full_name}",
               first_seen, f"{description} ({summary})" if description
               else summary or full_name)
    feed.updated(entries[0][1] if entries else "1970-01-01T00:00:00Z")
    return feed.atom_str(pretty=True)


def render_developer_feed(period: str, language: str, entries: list[tuple[Any, ...]],
                          web_url: str) -> bytes:
    label = f"{period} trending developers, {language or 'all languages'}"
    list_id = quote(language or 'all', safe='')
    path = f"/trending/developers/{language}" if language else "/trending/developers"
    feed = _feed(f"urn:hubcollect:trending-developers:{period}:{list_id}", label,
                 "Developers", f"{web_url}{path}?since={period}",
                 developer_feed_name(period, language))
    for login, first_seen, best_rank, name, repo, description, rank in reversed(entries):
        who = f"{name} ({login})" if name else login
        shown = f"popular repo {repo}" + (f": {description}" if description else "") \
            if repo else "no popular repository shown"
        _entry(feed, f"urn:hubcollect:trending-developers:{period}:{list_id}:{login}:"
               f"{first_seen}", f"{who} is on {label} (#{rank or best_rank})",
               f"{web_url}/{login}", first_seen, shown)
    feed.updated(entries[0][1] if entries else "1970-01-01T00:00:00Z")
    return feed.atom_str(pretty=True)


def _replace(path: Path, data: bytes) -> None:
    """Readers see the old file or the new one, never half of one."""
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
