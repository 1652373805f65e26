"""What one search round may spend on a query, and what it says it left incomplete.

A round is bounded: a query may send at most :func:`request_bound` requests, counted from its
plan (every slice paged to GitHub's cap, each page asked once more, and the probes a cut
spends), grown when GitHub's ``total_count`` shows the query or a slice holds more slices'
worth than planned. The bound only ever stops a round whose planning went wrong (GitHub's
answers shifting under it); a slice that cannot be cut is taken as its first 1000 results
before it gets there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scraper.slicing.slices import RESULTS_CAP, TARGET
from scraper.utils.units import counted

PROBES_PER_SLICE = 40
"""Probes one slice's cut may spend: a created: sweep narrowing a crowded star value to the
second it starts at halves its range at best, and GitHub's history is ~2^29 seconds long."""

CAPPED_STAT = "search/slices_capped"
BOUND_STAT = "search/request_bound_reached"


def request_bound(slices: int, per_page: int) -> int:
    """Requests a query may send in one round when it is (or will be) cut into ``slices``."""
    pages = math.ceil(RESULTS_CAP / per_page)
    return max(slices, 1) * (2 * pages + PROBES_PER_SLICE)


def slices_for(total: int) -> int:
    """How many slices ``total`` results are cut into, as the planner aims."""
    return math.ceil(total / TARGET)


def incomplete_note(stats: Mapping[str, Any]) -> str | None:
    """What a round left out on purpose, for its summary line and ``status``; None if nothing."""
    parts = []
    if capped := stats.get(CAPPED_STAT, 0):
        parts.append(f"{counted(capped, 'slice')} past {RESULTS_CAP} results that cannot be "
                     f"cut finer, first {RESULTS_CAP} taken")
    if bounded := stats.get(BOUND_STAT, 0):
        parts.append(f"{counted(bounded, 'query', 'queries')} stopped at the round's request "
                     "bound")
    return "incomplete: " + ", ".join(parts) if parts else None
