"""Atom feeds of documentation changes: ``{data_dir}/feeds/docs-{site}.atom``, one entry per
page whose content changed, newest first, each with a unified diff of its Markdown; rewritten
from the catalog after each build (feedgen, like the trending feeds in runner/catalog/feeds.py).

A page's first content is not a change; every later content of it is one, dated when the
collector first saw it. Sites are grouped as ``export --format llms`` groups them.
"""

from __future__ import annotations

import importlib.util
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path

from runner.catalog.feeds import FEED_ENTRIES, FEEDS_HINT, _replace
from runner.catalog.llms import site_dir_name, site_of
from scraper.docpages.sites import site_prefix
from scraper.utils.layout import DataLayout

DIFF_LINES = 80
"""Lines of unified diff an entry shows; its summary counts all of them."""

# Every content after a page's first (that the catalog holds), newest first: keys only, so the
# scan over a year of versions never reads their Markdown.
_CHANGES = (
    "SELECT v.url, v.content_hash, v.first_seen FROM docs_versions v "
    "WHERE {pages} EXISTS (SELECT 1 FROM docs_versions e WHERE e.url = v.url "
    "AND e.first_seen < v.first_seen) AND EXISTS (SELECT 1 FROM docs_contents c "
    "WHERE c.url = v.url AND c.content_hash = v.content_hash) "
    "ORDER BY v.first_seen DESC, v.url, v.content_hash")
ALL_CHANGES = _CHANGES.format(pages="")
PENDING_CHANGES = _CHANGES.format(pages="v.url IN (SELECT url FROM docs_feed_pending) AND")
# One entry's text: the content, and the content before it.
_ENTRY = (
    "SELECT c.title, c.markdown, (SELECT p.markdown FROM docs_versions w JOIN docs_contents p "
    "ON p.url = w.url AND p.content_hash = w.content_hash WHERE w.url = c.url "
    "AND w.first_seen < :first_seen ORDER BY w.first_seen DESC LIMIT 1) "
    "FROM docs_contents c WHERE c.url = :url AND c.content_hash = :content_hash")

Key = tuple[str, str, str]
"""A change: (url, content_hash, first_seen)."""
Entry = tuple[str, str, str, "str | None", str, str]
"""A feed entry: (url, content_hash, first_seen, title, summary, diff)."""


def feed_name(prefix: str) -> str:
    return f"docs-{site_dir_name(prefix)}.atom"


def diff_summary(before: str | None, after: str) -> tuple[str, str]:
    """("3 lines added, 1 removed", the unified diff, at most DIFF_LINES lines)."""
    import difflib  # only a build with changed pages diffs

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
    """Rewrite the feed of every docs site whose entries changed; returns the files written.

    The entries shown are kept in ``docs_feed_entries`` and the pages loaded since in
    ``docs_feed_pending`` (filled in each file's own transaction), so a build redoes only the
    sites of those pages, and diffs only their new entries: scanning every version of a year
    for each site's newest changes cost seconds at every build. The feeds are what a scan of
    the whole catalog gives; it is made again when there is no record to go on (a catalog of
    an earlier version, other configured sites) or when a shown entry stopped being a change.
    A kill before the commit leaves the pages pending, and the next build redoes them.
    """
    prefixes = sorted({site_prefix(url) for url in start_urls})
    sites_text = "\n".join(prefixes)
    recorded = conn.execute("SELECT sites FROM docs_feed_state").fetchall() == [(sites_text,)]
    if recorded and conn.execute("SELECT 1 FROM docs_feed_pending LIMIT 1").fetchone() is None:
        missing = [site for site, in conn.execute("SELECT DISTINCT site FROM docs_feed_entries")
                   if not (layout.feeds_dir / feed_name(site)).exists()]
        if not missing:
            return []
    conn.execute("BEGIN IMMEDIATE")
    try:
        shown = _shown(conn)
        changed = _update(conn, prefixes, shown) if recorded else None
        if changed is None:
            entries = _rescan(conn, prefixes)
            changed = {site: kept for site, kept in entries.items() if kept != shown.get(site)}
            changed.update((site, []) for site in shown.keys() - entries.keys())
        else:
            entries = {**shown, **changed}
        due = sorted(site for site, kept in entries.items() if kept and (
            site in changed or not (layout.feeds_dir / feed_name(site)).exists()))
        written = []
        if due and importlib.util.find_spec("feedgen") is None:
            warn(FEEDS_HINT)
            conn.execute("ROLLBACK")
            return []
        for site in due:
            layout.feeds_dir.mkdir(parents=True, exist_ok=True)
            path = layout.feeds_dir / feed_name(site)
            _replace(path, render_docs_feed(site, entries[site]))
            written.append(path)
        for site, kept in changed.items():
            conn.execute("DELETE FROM docs_feed_entries WHERE site = ?", (site,))
            conn.executemany("INSERT INTO docs_feed_entries VALUES (?, ?, ?, ?, ?, ?, ?)",
                             [(site, *entry) for entry in kept])
        conn.execute("DELETE FROM docs_feed_pending")
        conn.execute("DELETE FROM docs_feed_state")
        conn.execute("INSERT INTO docs_feed_state VALUES (?)", (sites_text,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return written


def _shown(conn: sqlite3.Connection) -> dict[str, list[Entry]]:
    shown: dict[str, list[Entry]] = {}
    for site, *entry in conn.execute(
            "SELECT site, url, content_hash, first_seen, title, summary, diff "
            "FROM docs_feed_entries ORDER BY site, first_seen DESC, url, content_hash"):
        shown.setdefault(site, []).append(tuple(entry))
    return shown


def _newest(keys: Iterable[Key]) -> list[Key]:
    """The FEED_ENTRIES newest, in the order of ALL_CHANGES."""
    ordered = sorted(keys, key=lambda key: (key[0], key[1]))
    return sorted(ordered, key=lambda key: key[2], reverse=True)[:FEED_ENTRIES]


def _entry(conn: sqlite3.Connection, url: str, content_hash: str, first_seen: str) -> Entry:
    title, markdown, before = conn.execute(
        _ENTRY, {"url": url, "content_hash": content_hash, "first_seen": first_seen}).fetchone()
    return (url, content_hash, first_seen, title, *diff_summary(before, markdown or ""))


def _rescan(conn: sqlite3.Connection, prefixes: list[str]) -> dict[str, list[Entry]]:
    """Every site's entries from all of the catalog's versions."""
    sites: dict[str, str] = {}  # url → its site: a page changes many times in a year
    keys: dict[str, list[Key]] = {}
    for url, content_hash, first_seen in conn.execute(ALL_CHANGES):
        site = sites.get(url)
        if site is None:
            site = sites[url] = site_of(url, prefixes)
        kept = keys.setdefault(site, [])
        if len(kept) < FEED_ENTRIES:
            kept.append((url, content_hash, first_seen))
    # Only the entries shown are read whole.
    return {site: [_entry(conn, *key) for key in kept] for site, kept in keys.items()}


def _update(conn: sqlite3.Connection, prefixes: list[str],
            shown: dict[str, list[Entry]]) -> dict[str, list[Entry]] | None:
    """The entries of the sites whose pages are pending, from those pages' versions and the
    entries shown; None when that cannot say (an entry shown is no longer a change, or has
    another date, and the feed was full: what came after it was never kept)."""
    # An entry older than every content its page got since stays as it is: its content and
    # the one before it are what they were.
    since = dict(conn.execute(
        "SELECT p.url, min(v.first_seen) FROM docs_feed_pending p JOIN docs_versions v "
        "ON v.url = p.url AND v.content_hash = p.content_hash GROUP BY p.url"))
    fresh: dict[str, list[Key]] = {}
    for url, content_hash, first_seen in conn.execute(PENDING_CHANGES):
        fresh.setdefault(site_of(url, prefixes), []).append((url, content_hash, first_seen))
    changed = {}
    for site in {site_of(url, prefixes) for url in since}:
        old = shown.get(site, [])
        keys = fresh.get(site, [])
        again = set(keys)
        if len(old) >= FEED_ENTRIES and any(
                entry[0] in since and entry[:3] not in again for entry in old):
            return None
        kept = {entry[:3]: entry for entry in old
                if entry[0] not in since or entry[2] < since[entry[0]]}
        entries = [kept.get(key) or _entry(conn, *key)
                   for key in _newest({*kept, *keys})]
        if entries != old:
            changed[site] = entries
    return changed


def render_docs_feed(prefix: str, entries: list[Entry]) -> bytes:
    from feedgen.feed import FeedGenerator

    feed = FeedGenerator()
    feed.id(f"urn:hubcollect:docs:{prefix}")
    feed.title(f"Changed pages of {prefix}")
    feed.subtitle(f"Documentation pages under {prefix} whose content changed, as hubcollect "
                  "saw them")
    feed.author({"name": "hubcollect"})
    feed.link(href=prefix, rel="alternate")
    # Newest first in the feed: feedgen writes entries in reverse order of adding.
    for url, content_hash, first_seen, title, summary, diff in reversed(entries):
        entry = feed.add_entry()
        entry.id(f"urn:hubcollect:docs:{url}:{content_hash}")
        entry.title(f"{title or url} changed")
        entry.link(href=url, rel="alternate")
        entry.updated(first_seen)
        entry.published(first_seen)
        entry.summary(summary)
        entry.content(diff, type="text")
    feed.updated(entries[0][2])
    return feed.atom_str(pretty=True)
