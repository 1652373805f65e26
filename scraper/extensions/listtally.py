"""What each list gave this round: rows, how full they were, and when data last came.

A *list* is what the collector fetches on a schedule and can go stale on its own: a trending
page (``trending/python?since=daily``, path and query of its URL, never the host), a search
query (as configured), a docs site (its prefix, any password masked). Rows are counted as the
parse yields them, duplicates of collected content included (the data is there, unchanged); a
search page answered 304 (unchanged since it was collected) confirms its query's data without
rows. The worker's state file carries the tally (:class:`scraper.extensions.workerstate
.WorkerState`), so ``metrics`` reads each list's freshness from files the runner already keeps.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any
from urllib.parse import urlsplit

import scrapy

from scraper.docpages.sites import site_prefix
from scraper.items import DocPageItem, SearchRepoItem, TrendingDeveloperPageItem, TrendingPageItem
from scraper.utils.urlmask import mask_url

PAGE_ROWS = {TrendingPageItem: "rows", TrendingDeveloperPageItem: "developers"}
"""Page items and the field holding their rows (the per-row items are the same rows again)."""


def list_key(item: scrapy.Item, sites: Iterable[str] = ()) -> str | None:
    """The list ``item`` came from; None for an item that is another's row (a trending row
    item: its page counts it). ``sites``: the docs spider's site prefixes."""
    if isinstance(item, TrendingPageItem | TrendingDeveloperPageItem):
        parts = urlsplit(str(item.get("url") or ""))
        return parts.path.lstrip("/") + (f"?{parts.query}" if parts.query else "")
    if isinstance(item, SearchRepoItem):
        return str(item.get("query") or "")
    if isinstance(item, DocPageItem):
        url = str(item.get("url") or "")
        return _masked(longest_site(url, sites) or site_prefix(url))
    return None


def longest_site(url: str, sites: Iterable[str]) -> str | None:
    """The longest of ``sites`` that ``url`` starts with. A mapping or set of sites is taken to
    hold site prefixes as the docs spider keeps them (each ending in ``/``: ``site_prefix``) and
    is asked for the URL's own prefixes up to each ``/``, longest first: a few lookups an item
    where reading every site costs the count of sites (27 µs an item at 256 sites)."""
    if isinstance(sites, Mapping | AbstractSet):
        end = len(url)
        while (end := url.rfind("/", 0, end)) >= 0:
            if url[: end + 1] in sites:
                return url[: end + 1]
        return None
    return max((s for s in sites if url.startswith(s)), key=len, default=None)


# A list's key is its site's masked prefix, the same few strings item after item.
_masked = functools.lru_cache(maxsize=4096)(mask_url)


def rows_and_fields(item: scrapy.Item) -> tuple[int, int, int]:
    """(rows, filled fields, fields) of ``item``: a page item's rows and their values; any
    other item is one row of its content fields."""
    field = next((name for cls, name in PAGE_ROWS.items() if isinstance(item, cls)), None)
    if field is not None:
        rows = [row for row in item.get(field) or () if isinstance(row, dict)]
        values = [value for row in rows for value in row.values()]
        count = len(rows)
    else:
        values = [item.get(name) for name, meta in item.fields.items() if meta.get("content")]
        count = 1
    return count, sum(1 for value in values if _filled(value)), len(values)


def _filled(value: Any) -> bool:
    return value is not None and value != "" and value != [] and value != {}


class ListTally:
    """This round's rows per list, their field coverage, and when each list last had data."""

    def __init__(self) -> None:
        self.rows: Counter[str] = Counter()
        self.filled: Counter[str] = Counter()
        self.fields: Counter[str] = Counter()
        self.last_at: dict[str, float] = {}

    def add(self, item: scrapy.Item, now: float, sites: Iterable[str] = ()) -> None:
        key = list_key(item, sites)
        if key is None:
            return
        rows, filled, fields = rows_and_fields(item)
        self.rows[key] += rows
        self.filled[key] += filled
        self.fields[key] += fields
        self.last_at[key] = now

    def confirm(self, key: str, now: float) -> None:
        """The list's data is unchanged (a 304): fresh, with no rows this time."""
        self.last_at[key] = now

    def coverage(self, key: str) -> float:
        """The share of the list's fields that held a value this round (1.0 with no fields)."""
        return self.filled[key] / self.fields[key] if self.fields[key] else 1.0

    def merged(self, earlier: dict[str, Any], keep_after: float) -> dict[str, dict[str, Any]]:
        """The state file's ``lists``: ``earlier``'s (a previous round's file) updated with this
        round's; a list without data since ``keep_after`` (no longer configured) is left out."""
        lists: dict[str, dict[str, Any]] = {}
        for key, entry in earlier.items():
            last = entry.get("last_data_at") if isinstance(entry, dict) else None
            if isinstance(last, int | float) and last > keep_after:
                lists[key] = {"last_data_at": last, "rows": 0}
        for key, last in self.last_at.items():
            lists[key] = {"last_data_at": last, "rows": self.rows[key]}
        return lists
