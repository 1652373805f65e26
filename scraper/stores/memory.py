"""Every store in memory, for in-process tests of the components (``*_STORAGE`` pointing here).

The stores of crawls that name the same ``MEMORY_STORAGE_SPACE`` share their contents (a test's
second round sees the first one's records); with the default, "", each store starts empty.
``MemoryOutage.down()`` makes every store of a space unreachable (``up`` False, every call raises
:class:`~scraper.stores.base.StoreUnavailable`) until ``MemoryOutage.back()``: the components'
outage handling is tested without a Redis.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from scrapy.crawler import Crawler

from scraper.budget.store import BudgetStore, BudgetTiming
from scraper.searchslices import Slice
from scraper.stores.archive import ArchivedPage
from scraper.stores.base import AlwaysUp, PageTag, StoreUnavailable

SPACES: dict[str, dict[str, Any]] = {}
WAIT_POLL = 0.01


def space(name: str) -> dict[str, Any]:
    """The shared contents of one space ("" = a new, private one)."""
    if not name:
        return {}
    return SPACES.setdefault(name, {})


class MemoryOutage:
    """The outage contract, switchable by a test."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    @staticmethod
    def down(name: str) -> None:
        space(name)["down"] = True

    @staticmethod
    def back(name: str) -> None:
        space(name)["down"] = False

    @property
    def up(self) -> bool:
        return not self.data.get("down")

    def check(self) -> None:
        if not self.up:
            raise StoreUnavailable("the memory store is switched off")

    async def wait_until_up(self, should_stop: Callable[[], bool] | None = None) -> bool:
        while not self.up:
            if should_stop is not None and should_stop():
                return False
            await asyncio.sleep(WAIT_POLL)
        return True

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        return cls(space(crawler.settings.get("MEMORY_STORAGE_SPACE", "")))


class MemoryDeltaFetchStorage(MemoryOutage):
    def open_spider(self, spider: str, refresh_after: float | None) -> None:
        self.entries: dict[bytes, str] = self.data.setdefault(f"deltafetch:{spider}", {})
        self.page_links: dict[bytes, list[str]] = self.data.setdefault(f"links:{spider}", {})

    def get(self, key: bytes) -> str | None:
        self.check()
        return self.entries.get(key)

    def links(self, key: bytes) -> list[str]:
        self.check()
        return list(self.page_links.get(key, ()))

    def record(self, key: bytes, value: str, links: list[str] | None = None) -> None:
        self.check()
        if links is not None:
            self.page_links[key] = list(links)
        self.entries[key] = value

    def close_spider(self) -> None:
        """Nothing to close."""


class MemoryContentHashStorage(MemoryOutage):
    """Claims are shared by the space's stores, as on Redis (one process plays two workers)."""

    owner = ""

    def open_spider(self, spider: str, ignore_before: str) -> None:
        self.ignore_before = ignore_before
        self.written: dict[str, str] = self.data.setdefault(f"contenthash:{spider}", {})
        self.claims: dict[str, int] = self.data.setdefault(f"claims:{spider}", {})

    def claim(self, digest: str) -> bool:
        self.check()
        written = self.written.get(digest)
        if written is not None and written >= self.ignore_before:
            return False
        holder = self.claims.setdefault(digest, id(self))
        return holder == id(self)

    def confirm(self, digest: str, collected_at: str) -> None:
        self.check()
        self.written[digest] = collected_at
        self.release(digest)

    def release(self, digest: str) -> None:
        if self.claims.get(digest) == id(self):
            del self.claims[digest]

    def close_spider(self) -> None:
        """Nothing to close."""


class MemoryEtagStorage(MemoryOutage):
    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.tags: dict[tuple[str, str], PageTag] = data.setdefault("etags", {})

    def get(self, identity: str, url: str) -> PageTag | None:
        self.check()
        return self.tags.get((identity, url))

    def remember(self, identity: str, pages: dict[str, PageTag]) -> None:
        self.check()
        self.tags.update({(identity, url): tag for url, tag in pages.items()})

    def close(self) -> None:
        """Nothing to close."""


class MemorySlicePlanStorage(MemoryOutage):
    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.plans: dict[str, list[Slice]] = data.setdefault("sliceplans", {})

    def load(self, query: str) -> list[Slice] | None:
        self.check()
        plan = self.plans.get(query)
        return None if plan is None else list(plan)

    def save(self, query: str, slices: list[Slice]) -> None:
        self.check()
        self.plans[query] = list(slices)

    def replace(self, query: str, expected: list[Slice] | None, slices: list[Slice]) -> bool:
        if self.load(query) != expected:
            return False
        self.save(query, slices)
        return True

    def close(self) -> None:
        """Nothing to close."""


class MemoryBudgetStorage(MemoryOutage, BudgetStore):
    """The budget's rules on an in-memory database of this process (not shared by a space:
    the budget's state is the rules' own tables)."""

    def __init__(self, data: dict[str, Any], timing: BudgetTiming) -> None:
        MemoryOutage.__init__(self, data)
        BudgetStore.__init__(self, Path(":memory:"), timing)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MemoryBudgetStorage:
        settings = crawler.settings
        return cls(space(settings.get("MEMORY_STORAGE_SPACE", "")),
                   BudgetTiming.from_settings(settings))

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self.check()
        with super()._tx() as conn:
            yield conn


class MemoryPageArchive(AlwaysUp):
    """The page archive in memory (``TRENDING_ARCHIVE_STORAGE``): like the filesystem one,
    always up (an archive is local to the box that fetched its pages)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.fetches: dict[tuple[str, str], ArchivedPage] = data.setdefault("archive", {})
        self.bodies: dict[str, bytes] = data.setdefault("archive_bodies", {})

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MemoryPageArchive:
        return cls(space(crawler.settings.get("MEMORY_STORAGE_SPACE", "")))

    def put(self, page: ArchivedPage, body: bytes) -> None:
        self.bodies.setdefault(page.sha256, body)
        self.fetches[(page.url, page.observed_at)] = page

    def body(self, page: ArchivedPage) -> bytes:
        return self.bodies[self.fetches[(page.url, page.observed_at)].sha256]

    def pages(self, since: str | None = None) -> Iterator[ArchivedPage]:
        return iter(sorted((p for p in self.fetches.values() if p.observed_at >= (since or "")),
                           key=lambda p: (p.observed_at, p.url)))

    def recent(self, list_key: str, limit: int, before: str) -> list[ArchivedPage]:
        kept = [p for p in self.fetches.values()
                if p.list_key == list_key and p.observed_at < before and not p.drifted]
        return sorted(kept, key=lambda p: p.observed_at, reverse=True)[:limit]

    def reparsed(self, page: ArchivedPage) -> None:
        key = (page.url, page.observed_at)
        if key in self.fetches:
            self.fetches[key] = replace(self.fetches[key], parser_version=page.parser_version,
                                        profile=page.profile, drifted=page.drifted)

    def prune(self, older_than: str) -> int:
        gone = [key for key, page in self.fetches.items() if page.observed_at < older_than]
        for key in gone:
            del self.fetches[key]
        named = {page.sha256 for page in self.fetches.values()}
        for sha in set(self.bodies) - named:
            del self.bodies[sha]
        return len(gone)

    def close(self) -> None:
        pass
