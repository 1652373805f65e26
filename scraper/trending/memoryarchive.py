"""The page archive in memory, for in-process tests (``TRENDING_ARCHIVE_STORAGE`` pointing
here)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from scrapy.crawler import Crawler

from scraper.stores.base import AlwaysUp
from scraper.stores.memory import space
from scraper.trending.archive import ArchivedPage, unreadable
from scraper.utils.stamps import stamp_ms


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
        kept = self.fetches.get((page.url, page.observed_at))
        if kept is None:
            raise unreadable(page, "no such fetch in the archive")
        return self.bodies[kept.sha256]

    def pages(self, since: str | None = None, until: str | None = None,
              lists: Sequence[str] | None = None) -> Iterator[ArchivedPage]:
        low, high = stamp_ms(since) if since else 0, stamp_ms(until) if until else 1 << 62
        return iter(sorted((p for p in self.fetches.values()
                            if low <= stamp_ms(p.observed_at) < high
                            and (lists is None or p.list_key in lists)),
                           key=lambda p: (p.observed_at, p.url)))

    def latest(self, url: str, at: str | None = None) -> ArchivedPage | None:
        before = stamp_ms(at) if at else 1 << 62
        kept = [p for p in self.fetches.values()
                if p.url == url and stamp_ms(p.observed_at) <= before]
        return max(kept, key=lambda p: p.observed_at) if kept else None

    def list_keys(self) -> list[str]:
        return sorted({p.list_key for p in self.fetches.values()})

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
