"""The page archive in memory, for in-process tests (``TRENDING_ARCHIVE_STORAGE`` pointing
here)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from scrapy.crawler import Crawler

from scraper.stores.base import AlwaysUp
from scraper.stores.memory import space
from scraper.trending.archive import ArchivedPage


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
