"""What the in-memory stores share, for in-process tests of the components (``*_STORAGE``
naming a feature's memory backend: :mod:`scraper.dedup.memorydedup`,
:mod:`scraper.budget.memorybudget`,
:mod:`scraper.slicing.memoryplans`, :mod:`scraper.trending.memoryarchive`).

The stores of crawls that name the same ``MEMORY_STORAGE_SPACE`` share their contents (a test's
second round sees the first one's records); with the default, "", each store starts empty.
``MemoryOutage.down()`` makes every store of a space unreachable (``up`` False, every call raises
:class:`~scraper.stores.base.StoreUnavailable`) until ``MemoryOutage.back()``: the components'
outage handling is tested without a Redis.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from scrapy.crawler import Crawler

from scraper.stores.base import StoreUnavailable

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


