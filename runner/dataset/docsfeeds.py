"""Atom feeds of documentation changes: ``{data_dir}/feeds/docs-{site}.atom``, one entry per
page whose content changed, newest first, each with a unified diff of its Markdown; rewritten
from the catalog after each build (feedgen, like the trending feeds in runner/dataset/feeds.py).

A page's first content is not a change; every later content of it is one, dated when the
collector first saw it. Sites are grouped as ``export --format llms`` groups them.
"""

from __future__ import annotations

import difflib
import importlib.util
import sqlite3
from collections.abc import Callable
from pathlib import Path

from runner.dataset.feeds import FEED_ENTRIES, FEEDS_HINT, _replace
from runner.dataset.llms import site_dir_name, site_of
from scraper.layout import DataLayout
from scraper.parsers.docs import site_prefix

DIFF_LINES = 80
"""Lines of unified diff an entry shows; its summary counts all of them."""

# Every content after a page's first (that the catalog holds), newest first: keys only, so the
# scan over a year of versions never reads their Markdown.
_CHANGES = (
    "SELECT v.url, v.content_hash, v.first_seen FROM docs_versions v "
    "WHERE EXISTS (SELECT 1 FROM docs_versions e WHERE e.url = v.url "
    "AND e.first_seen < v.first_seen) AND EXISTS (SELECT 1 FROM docs_contents c "
    "WHERE c.url = v.url AND c.content_hash = v.content_hash) "
    "ORDER BY v.first_seen DESC, v.url")
# One entry's text: the content, and the content before it.
_ENTRY = (
    "SELECT c.title, c.markdown, (SELECT p.markdown FROM docs_versions w JOIN docs_contents p "
    "ON p.url = w.url AND p.content_hash = w.content_hash WHERE w.url = c.url "
    "AND w.first_seen < :first_seen ORDER BY w.first_seen DESC LIMIT 1) "
    "FROM docs_contents c WHERE c.url = :url AND c.content_hash = :content_hash")


def feed_name(prefix: str) -> str:
    return f"docs-{site_dir_name(prefix)}.atom"


def diff_summary(before: str | None, after: str) -> tuple[str, str]:
    """("3 lines added, 1 removed", the unified diff, at most DIFF_LINES lines)."""
    lines = list(difflib.unified_diff((before or "").split("\n"), after.split("\n"),
                                      "before", "after", lineterm="", n=1))
    added = sum(1 for line in lines[2:] if line.startswith("+"))
    removed = sum(1 for line in lines[2:] if line.startswith("-"))
    shown = lines[:DIFF_LINES]
    if len(lines) > DIFF_LINES:
        shown.append(f"… {len(lines) - DIFF_LINES} more diff lines")
    return f"{added} lines added, {removed} removed", "\n".join(shown)


def write_docs_feeds(conn: sqlite3.Connection, layout: DataLayout, start_urls: list[str], *,
                     warn: Callable[[str], None]) -> list[Path]:
    """Rewrite the feed of every docs site with changes; returns the files written."""
    prefixes = sorted({site_prefix(url) for url in start_urls})
    sites: dict[str, str] = {}  # url → its site: a page changes many times in a year
    keys: dict[str, list[tuple[str, str, str]]] = {}
    for url, content_hash, first_seen in conn.execute(_CHANGES):
        site = sites.get(url)
        if site is None:
            site = sites[url] = site_of(url, prefixes)
        kept = keys.setdefault(site, [])
        if len(kept) < FEED_ENTRIES:
            kept.append((url, content_hash, first_seen))
    # Only the entries shown are read whole.
    entries = {site: [(url, content_hash, first_seen, *conn.execute(
        _ENTRY, {"url": url, "content_hash": content_hash, "first_seen": first_seen}
    ).fetchone()) for url, content_hash, first_seen in kept] for site, kept in keys.items()}
    if not entries:
        return []
    if importlib.util.find_spec("feedgen") is None:
        warn(FEEDS_HINT)
        return []
    layout.feeds_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for prefix, changes in sorted(entries.items()):
        path = layout.feeds_dir / feed_name(prefix)
        _replace(path, render_docs_feed(prefix, changes))
        written.append(path)
    return written


def render_docs_feed(prefix: str, changes: list[tuple[str, ...]]) -> bytes:
    from feedgen.feed import FeedGenerator

    feed = FeedGenerator()
    feed.id(f"urn:hubcollect:docs:{prefix}")
    feed.title(f"Changed pages of {prefix}")
    feed.subtitle(f"Documentation pages under {prefix} whose content changed, as hubcollect "
                  "saw them")
    feed.author({"name": "hubcollect"})
    feed.link(href=prefix, rel="alternate")
    # Newest first in the feed: feedgen writes entries in reverse order of adding.
    for url, content_hash, first_seen, title, markdown, before in reversed(changes):
        summary, diff = diff_summary(before, markdown or "")
        entry = feed.add_entry()
        entry.id(f"urn:hubcollect:docs:{url}:{content_hash}")
        entry.title(f"{title or url} changed")
        entry.link(href=url, rel="alternate")
        entry.updated(first_seen)
        entry.published(first_seen)
        entry.summary(summary)
        entry.content(diff, type="text")
    feed.updated(changes[0][2])
    return feed.atom_str(pretty=True)
