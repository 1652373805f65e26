"""The slice-plan store in memory, for in-process tests (``SLICEPLAN_STORAGE`` pointing here;
spaces and outages as :mod:`scraper.stores.memory`)."""

from __future__ import annotations

from typing import Any

from scraper.slicing.slices import Slice
from scraper.stores.memory import MemoryOutage


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
