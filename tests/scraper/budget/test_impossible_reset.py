"""A reset farther away than any window (GitHub's are at most an hour) is not waited out: the
budget forgets what that answer said and asks ``/rate_limit`` before it waits."""

from __future__ import annotations

from pathlib import Path

from scraper.budget.limits import PRIMARY, RateHeaders
from scraper.budget.store import BucketKey, BucketSpec, BudgetStore, BudgetTiming

YEAR_3000 = 32503680000.0
KEY = BucketKey("anonymous", "search")


def probed_store(tmp_path: Path, clock: list[float]) -> BudgetStore:
    """A budget whose start's /rate_limit said 30 of 30 left for the minute."""
    timing = BudgetTiming(0.5, 0.05, 60.0, 3600.0)  # BUDGET_MAX_WAIT's default, 3660 s
    store = BudgetStore(tmp_path / "budget.sqlite", timing, clock=lambda: clock[0],
                        wall=lambda: clock[0])
    store.define(KEY, BucketSpec(30, 60.0, probe=True))
    store.probe_result("anonymous", {"search": RateHeaders(limit=30, remaining=30,
                                                           reset=clock[0] + 60)})
    return store


def probe_and_go(store: BudgetStore, clock: list[float]) -> None:
    """The next request's claim asks /rate_limit first; the truth lets it go at once."""
    ticket = store.reserve(KEY)
    assert ticket.slot_at <= clock[0] + 2
    clock[0] = max(clock[0], ticket.slot_at)
    claim = store.claim(ticket)
    assert claim.probe and not claim.go
    store.probe_result("anonymous", {"search": RateHeaders(limit=30, remaining=29,
                                                           reset=clock[0] + 60)})
    clock[0] = max(clock[0], store.slot_of(ticket))
    assert store.claim(ticket).go


def test_a_200_saying_remaining_0_until_the_year_3000_is_asked_about_not_waited_out(
        tmp_path: Path) -> None:
    clock = [1_000_000.0]
    store = probed_store(tmp_path, clock)
    store.complete(store.reserve(KEY), KEY, RateHeaders(limit=30, remaining=0, reset=YEAR_3000))
    (bucket,) = store.buckets()
    assert (bucket["remaining"], bucket["reset_at"], bucket["source"]) == (None, None, "guess")
    clock[0] += 61  # the start's probe is a window old: the next claim asks again
    probe_and_go(store, clock)


def test_a_limit_answer_with_an_impossible_reset_pauses_nothing_once_then_backs_off(
        tmp_path: Path) -> None:
    clock = [1_000_000.0]
    store = probed_store(tmp_path, clock)
    first = store.limited(store.reserve(KEY), KEY, RateHeaders(remaining=0, reset=YEAR_3000),
                          PRIMARY, None)
    assert first.until <= clock[0] and "/rate_limit asked first" in first.reason
    probe_and_go(store, clock)  # asked again though the start's probe is seconds old
    # A second such answer before any success: /rate_limit could not settle it, so back off.
    second = store.limited(None, KEY, RateHeaders(remaining=0, reset=YEAR_3000), PRIMARY, None)
    assert second.until == clock[0] + 60.0, second
