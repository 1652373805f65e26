"""The budget and ETag stores in memory, for in-process tests (``BUDGET_STORAGE`` and
``ETAG_STORAGE`` pointing here; spaces and outages as :mod:`scraper.stores.memory`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from scrapy.crawler import Crawler

from scraper.budget.etags import PageTag
from scraper.budget.store import BudgetStore, BudgetTiming
from scraper.stores.memory import MemoryOutage, space


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
