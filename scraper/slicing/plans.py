"""The slices each search query was cut into, kept between rounds: the protocol a plan store
keeps (``SLICEPLAN_STORAGE``) and the plan's JSON form. Backends: :mod:`.sqliteplans`,
:mod:`.redisplans`, :mod:`.memoryplans`."""

from __future__ import annotations

import json
from typing import Protocol

from scraper.slicing.slices import Slice
from scraper.stores.base import Outage


class SlicePlanStorage(Outage, Protocol):
    """The slices each search query was cut into. A plan is saved whole, in one atomic write:
    a reader sees the previous plan or the new one, never part of one."""

    def load(self, query: str) -> list[Slice] | None:
        """The query's last plan (``[]``: the query itself, unsliced), None if it has none."""

    def save(self, query: str, slices: list[Slice]) -> None: ...

    def replace(self, query: str, expected: list[Slice] | None, slices: list[Slice]) -> bool:
        """Save ``slices`` only if the query's plan is still ``expected`` (None: it has none),
        in one atomic step; False (nothing written) if another process changed it first."""

    def close(self) -> None: ...


def encode_plan(slices: list[Slice]) -> str:
    return json.dumps([s.to_json() for s in slices])


def decode_plan(raw: str | bytes) -> list[Slice] | None:
    """None for a plan this version did not write: planned afresh, and overwritten once the
    new plan is whole."""
    try:
        return [Slice.from_json(entry) for entry in json.loads(raw)]
    except (ValueError, TypeError):
        return None


WHOLE: list[Slice] = []
"""The plan of a query that fits under the cap: no slices, the query itself."""
