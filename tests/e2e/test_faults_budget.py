"""Rate-limit answers built to stop the budget forever stop it for at most BUDGET_MAX_WAIT.

The real ``scrapy crawl search`` against tests/support/fakes/hostile.py's ``/api-wedge/``: a
``/rate_limit`` with ``reset: 1e300``, a ``retry-after`` of 3,000 years, a reset in the year
3000, headers that are not numbers. Each is clamped or ignored with one WARNING, the answer is
kept, and the next crawl (a restart on the same budget file) sends requests again.
"""

from __future__ import annotations

import itertools
import sqlite3
import subprocess
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


def wedge_search(collector: Collector, fake_hostile: Any, api: str, queries: tuple[str, ...],
                 settings: dict[str, Any]) -> tuple[subprocess.CompletedProcess[str], float, str]:
    """``scrapy crawl search`` of ``queries`` against the hostile fake's ``/{api}/``: the
    result, its wall time and the spider's log."""
    collector.configure(spiders={"search": {"queries": list(queries), "complete": False,
                                            "settings": settings}})
    generous_budget(collector, web_url=fake_hostile.url(), web_min_interval=0,
                    api_url=f"{fake_hostile.url()}/{api}")
    started = time.monotonic()
    result = collector.crawl("search", timeout=90)
    took = time.monotonic() - started
    log = collector.log("search")
    assert result.returncode == 0, log[-3000:]
    return result, took, log


@pytest.mark.timeout(120)
def test_no_answer_wedges_the_budget_past_max_wait(collector: Collector,
                                                   fake_hostile: Any) -> None:
    first, took, log = wedge_search(collector, fake_hostile, "api-wedge", QUERIES,
                                    {"BUDGET_MAX_WAIT": MAX_WAIT})
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


@pytest.mark.timeout(120)
def test_an_impossible_reset_asks_rate_limit_before_any_wait(collector: Collector,
                                                             fake_hostile: Any) -> None:
    """At the default BUDGET_MAX_WAIT (an hour): a 200 and a 403 that say "remaining 0 until the
    year 3000" stop nothing; the budget asks ``/rate_limit``, which tells the truth, and the
    crawl goes on within seconds, every query answered."""
    queries = ("reset3000", "limit3000", "after")
    _, took, log = wedge_search(collector, fake_hostile, "api-honest", queries, {})
    assert took < 45, took
    assert sorted(item["full_name"] for item in collector.items("search")) == sorted(
        f"hostile/{q}-repo-1" for q in queries)
    counts = fake_hostile.stats()["counts"]
    assert counts["honest:limit3000"] == 2  # the 403, then its retry once /rate_limit spoke
    assert counts["honest:rate_limit"] >= 2, counts  # at the start, and after the 403
    said = warnings(log)
    assert len([line for line in said if "3000-01-01 00:00:00 UTC is farther away" in line]) == 1
    assert not [line for line in said if "paused for all workers" in line], said


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


def crawl_took(collector: Collector, spider: str) -> float:
    started = time.monotonic()
    result = collector.crawl(spider, timeout=150)
    took = time.monotonic() - started
    assert result.returncode == 0, (result.stderr, collector.log(spider)[-3000:])
    return took


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fake_github", [{"rate_limit_api": "disabled", "one_origin": True}],
                         indirect=True)
def test_a_github_without_rate_limits_costs_no_wait(collector: Collector,
                                                    fake_github: Any) -> None:
    """A GitHub Enterprise Server with rate limiting off: ``/rate_limit`` answers 404 and no
    answer has ``x-ratelimit-*`` headers. The first guess (60 an hour, 10 a minute anonymous)
    is no limit of that server: nothing waits for it. Its web pages on the API's own origin
    (one server for both) draw on the API budget, as GitHub's would."""
    api = fake_github.url("api")
    collector.configure(spiders={"trending": {"languages": [""], "periods": ["daily"]},
                                 "search": {"queries": ["topic:web-scraping"],
                                            "complete": False}})
    collector.update_config({"github": {"web_url": api, "api_url": api, "web_min_interval": 0}})
    took = [crawl_took(collector, "trending") for _ in range(2)]
    took += [crawl_took(collector, "search") for _ in range(2)]  # 3 pages each
    assert max(took) < 20, took  # a minute each before: the anonymous core guess, 60 an hour
    stats = collector.stats("search")
    assert stats.get("github_budget/wait_seconds", 0) < 1, stats
    served = fake_github.stats()
    assert served["counts"]["/rate_limit"] == 1, served["counts"]  # learned once, kept
    assert collector.stats("trending").get("github_budget/no_rate_limit_api") is None
    status = collector.runner("status")
    rows = [line.split() for line in status.stdout.splitlines()
            if line.startswith(("core ", "search "))]
    assert [row[:3] for row in rows] == [["core", "anonymous", "none"],
                                         ["search", "anonymous", "none"]], status.stdout
    assert "no rate limit API" in collector.log("trending").split("Spider opened")[1]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fake_github", [{"rate_limit_api": "html"}], indirect=True)
def test_a_rate_limit_endpoint_that_is_no_json_leaves_the_headers_in_charge(
        collector: Collector, fake_github: Any) -> None:
    """A proxy's page instead of ``/rate_limit``: no wait for the probe or the guess, and the
    answers' headers (the fake's 30 a minute) pace the budget from the first one."""
    collector.configure(github=fake_github,
                        spiders={"search": {"queries": ["topic:web-scraping"],
                                            "complete": False}})
    took = crawl_took(collector, "search")
    requests = [r for r in fake_github.stats()["requests"] if r["path"] == "/search/repositories"]
    assert len(requests) == 3
    gaps = [b["t"] - a["t"] for a, b in itertools.pairwise(requests)]
    # 29 left of 30 for the minute after the first answer: its headers spread them, ~2 s apart
    # (the anonymous guess, 10 a minute, would have been 6 s; no limit at all, none).
    assert all(1.5 < gap < 4 for gap in gaps), gaps
    assert took < 40, took
    assert "200 with no rate limits" in collector.log("search")
    status = collector.runner("status").stdout
    (row,) = [line.split() for line in status.splitlines() if line.startswith("search ")]
    assert row[2] == "30/60s", status
