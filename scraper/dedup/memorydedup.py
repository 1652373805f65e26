"""The dedup stores in memory, for in-process tests (``DELTAFETCH_STORAGE`` and
``CONTENTHASH_STORAGE`` pointing here; spaces and outages as :mod:`scraper.stores.memory`)."""

from __future__ import annotations

from scraper.stores.memory import MemoryOutage


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
