"""Rate-limit answers built to stop the budget forever stop it for at most BUDGET_MAX_WAIT.

The real ``scrapy crawl search`` against tests/support/fakes/hostile.py's ``/api-wedge/``: a
``/rate_limit`` with ``reset: 1e300``, a ``retry-after`` of 3,000 years, a reset in the year
3000, headers that are not numbers. Each is clamped or ignored with one WARNING, the answer is
kept, and the next crawl (a restart on the same budget file) sends requests again.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from scraper.budget.limits import PRIMARY, RateHeaders
from scraper.budget.store import BucketKey, BucketSpec, BudgetStore, BudgetTiming
from tests.support.collector import Collector, generous_budget

QUERIES = ("retryforever", "reset3000", "badheaders")
MAX_WAIT = 6.0


def warnings(log: str) -> list[str]:
    return [line for line in log.splitlines() if "] WARNING: " in line]


@pytest.mark.timeout(120)
def test_no_answer_wedges_the_budget_past_max_wait(collector: Collector,
                                                   fake_hostile: Any) -> None:
    collector.configure(spiders={"search": {"queries": list(QUERIES), "complete": False,
                                            "settings": {"BUDGET_MAX_WAIT": MAX_WAIT}}})
    generous_budget(collector, web_url=fake_hostile.url(), web_min_interval=0,
                    api_url=f"{fake_hostile.url()}/api-wedge")
    started = time.monotonic()
    first = collector.crawl("search", timeout=60)
    took = time.monotonic() - started
    log = collector.log("search")
    assert first.returncode == 0, log[-3000:]
    assert "Traceback" not in log + first.stderr
    assert took < 30, took
    # Every answer kept: one repository per query.
    assert sorted(item["full_name"] for item in collector.items("search")) == sorted(
        f"hostile/{q}-repo-1" for q in QUERIES)
    said = warnings(log)
    for text in ("x-ratelimit-limit: 'plenty'", "x-ratelimit-remaining: 'lots'",
                 "x-ratelimit-reset: 'soon'", "x-ratelimit-used: '1e400'",
                 "x-ratelimit-reset: 3000-01-01 00:00:00 UTC is farther away than "
                 "BUDGET_MAX_WAIT"):
        assert len([line for line in said if text in line]) == 1, (text, said)
    (pause,) = [line for line in said if "paused for all workers" in line]
    assert "retry-after 6s (clamped" in pause
    assert not [line for line in log.splitlines() if "] ERROR: " in line]

    # A restart on the same budget: requests go out at once, nothing is stored as wedged.
    served = fake_hostile.stats()["counts"]
    started = time.monotonic()
    second = collector.crawl("search", timeout=60)
    assert second.returncode == 0, collector.log("search")[-3000:]
    assert time.monotonic() - started < 20
    again = fake_hostile.stats()["counts"]
    for q in QUERIES:
        assert again[f"wedge:{q}"] > served[f"wedge:{q}"], q


def test_a_stored_budget_from_before_the_clamp_is_used_again(tmp_path: Path) -> None:
    """A budget file left wedged (a pause and a reset in the year 3000, a send an hour in the
    future: an older version, a clock stepped back) books the next request within max_wait."""
    path, now = tmp_path / "budget.sqlite", 1_000_000.0
    key = BucketKey("anonymous", "search")
    timing = BudgetTiming(0.5, 0.05, 60.0, 3600.0)  # BUDGET_MAX_WAIT's default, 3660 s
    store = BudgetStore(path, timing, clock=lambda: now)
    store.define(key, BucketSpec(30, 60.0))
    store.complete(store.reserve(key), key, RateHeaders(limit=30, remaining=10, reset=now + 30))
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE buckets SET pause_until = 32503680000, reset_at = 32503680000, "
                     "remaining = 0, last_sent_at = ?", (now + 3600,))
        conn.execute("UPDATE windows SET last_reset = 32503680000")
    store = BudgetStore(path, timing, clock=lambda: now)
    store.define(key, BucketSpec(30, 60.0))
    ticket = store.reserve(key)
    assert now <= ticket.slot_at <= now + 3660.0
    # A later, correct header is taken, not ignored as "older" than the year 3000.
    store.complete(None, key, RateHeaders(limit=30, remaining=29, reset=now + 50))
    (bucket,) = [b for b in store.buckets() if b["resource"] == "search"]
    assert (bucket["remaining"], bucket["reset_at"]) == (29, now + 50)
    limited = store.limited(None, key, RateHeaders(remaining=0, reset=now + 10**9), PRIMARY, None)
    assert limited.until <= now + 3660.0
