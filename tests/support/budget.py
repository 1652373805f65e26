"""The GitHub budget in-process: a fake clock, its timing, and one request's reserve-wait-claim."""

from __future__ import annotations

from typing import Any

from scraper.budget.limits import RateHeaders
from scraper.budget.store import BucketKey, BudgetStore, BudgetTiming


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


TIMING = BudgetTiming(reset_guard=0.5, min_interval=0.0, backoff_start=60.0, backoff_max=3600.0)


SEARCH = BucketKey("anonymous", "search")


def rate(remaining: int, reset: float, limit: int = 10) -> RateHeaders:
    return RateHeaders(limit=limit, remaining=remaining, reset=reset, resource="search")


def send(store: BudgetStore, clock: Clock, key: BucketKey = SEARCH) -> tuple[Any, float]:
    """Reserve, wait (on the fake clock) and claim until sent; returns (ticket, send time)."""
    ticket = store.reserve(key)
    for _ in range(1000):
        clock.now = max(clock.now, ticket.slot_at)
        claim = store.claim(ticket)
        if claim.go:
            return ticket, clock.now
        assert not claim.probe
    raise AssertionError("never sent")
