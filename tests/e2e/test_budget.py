"""The shared GitHub budget (issue 4): store rules, then real workers against the fake API.

Store tests run on a fake clock. The end-to-end tests start real ``python -m runner`` /
``scrapy crawl`` processes against the fake GitHub with short windows and judge by what the fake
saw (``/_stats``): every request's time, status and resource.
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import itertools
import json
import math
import re
import signal
import sqlite3
import subprocess
import textwrap
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml

from runner.core.budgetview import budget_rows, render_budget
from scraper.budget.limits import (
    PRIMARY,
    SECONDARY,
    RateHeaders,
    identity_for_token,
    identity_label,
    limit_kind,
    pause_for,
    retry_after_seconds,
)
from scraper.budget.store import BucketKey, BucketSpec, BudgetStore, PauseResult
from scraper.utils.layout import DataLayout
from scraper.utils.outcome import NOTHING_FETCHED_EXIT
from tests.support.budget import SEARCH, TIMING, Clock, rate, send
from tests.support.collector import REPO_ROOT, SCRAPY, Collector
from tests.support.fakes.launcher import FakeServer, fake_windows, start_fake_github

# --- the store, on a fake clock ---------------------------------------------------------------


WEB = BucketKey("github.com", "web")


def make_store(path: Path, clock: Clock, pid: int = 1,
               alive: Callable[[int], bool] = lambda p: True, **timing: Any) -> BudgetStore:
    store = BudgetStore(path / "budget.sqlite", dataclasses.replace(TIMING, **timing),
                        clock=clock, pid=pid, alive=alive)
    store.define(SEARCH, BucketSpec(10, 5.0))
    store.define(WEB, BucketSpec(None, 2.0))
    return store


def test_paces_evenly_at_window_over_limit(tmp_path: Path) -> None:
    clock = Clock()
    store = make_store(tmp_path, clock)
    tickets = [store.reserve(SEARCH) for _ in range(10)]
    start = clock.now
    assert [t.slot_at - start for t in tickets] == pytest.approx([i * 0.5 for i in range(10)])
    # An eleventh would be the window's eleventh: it waits for the (projected) next window,
    # which is a second longer than nominal since GitHub rounds its reset up.
    eleventh = store.reserve(SEARCH)
    assert eleventh.slot_at == pytest.approx(start + 5.0 + 1.0 + 0.5)


def test_two_processes_share_one_pace(tmp_path: Path) -> None:
    clock = Clock()
    a, b = make_store(tmp_path, clock, pid=1), make_store(tmp_path, clock, pid=2)
    slots = [(a if i % 2 else b).reserve(SEARCH).slot_at for i in range(6)]
    assert slots == sorted(slots)
    assert [round(y - x, 3) for x, y in itertools.pairwise(slots)] == [0.5] * 5


def test_headers_are_the_truth_and_in_flight_counts(tmp_path: Path) -> None:
    clock = Clock()
    store = make_store(tmp_path, clock)
    first, _ = send(store, clock)
    reset = math.ceil(clock.now + 5)
    store.complete(first, SEARCH, rate(2, reset))  # someone else used most of this window
    second, _ = send(store, clock)
    third, _ = send(store, clock)
    # Two in flight, two remaining: a fourth must wait for the reset even though nothing has
    # been answered yet.
    fourth = store.reserve(SEARCH)
    assert fourth.slot_at >= reset + 0.5
    # Answers out of order within one window: the lowest remaining wins.
    store.complete(third, SEARCH, rate(0, reset))
    store.complete(second, SEARCH, rate(1, reset))
    row = next(r for r in store.buckets() if r["resource"] == "search")
    assert row["remaining"] == 0 and row["source"] == "headers"
    clock.now = fourth.slot_at
    assert store.claim(fourth).go  # a new window


def test_spreads_what_is_left_over_the_time_left(tmp_path: Path) -> None:
    clock = Clock()
    store = make_store(tmp_path, clock, min_interval=0.1)
    ticket, _ = send(store, clock)
    # 9 left with 1.8 s to go (a window mostly idle, or refunded by 304s): 0.2 s apart.
    store.complete(ticket, SEARCH, rate(9, clock.now + 1.8))
    slots = [store.reserve(SEARCH).slot_at for _ in range(3)]
    gaps = [round(y - x, 2) for x, y in itertools.pairwise(slots)]
    assert all(0.1 <= g <= 0.5 for g in gaps) and gaps[0] < 0.5


def test_stale_and_newer_windows(tmp_path: Path) -> None:
    clock = Clock()
    store = make_store(tmp_path, clock)
    ticket, _ = send(store, clock)
    store.complete(ticket, SEARCH, rate(5, clock.now + 4))
    store.complete(None, SEARCH, rate(9, clock.now - 1))  # a window already over: ignored
    store.complete(None, SEARCH, rate(8, clock.now + 9))  # a newer window: replaces
    row = next(r for r in store.buckets() if r["resource"] == "search")
    assert (row["remaining"], row["reset_at"]) == (8, clock.now + 9)
    store.complete(None, SEARCH, rate(9, clock.now + 4))  # a late answer of the older one
    assert next(r for r in store.buckets() if r["resource"] == "search")["remaining"] == 8


def test_window_length_is_learned_from_the_reset_jump(tmp_path: Path) -> None:
    """A server whose windows are shorter than the configured guess (GitHub Enterprise Server,
    a test server) is paced by the window its x-ratelimit-reset shows, in every process."""
    clock = Clock()
    store = make_store(tmp_path, clock)
    store.define(SEARCH, BucketSpec(10, 60.0))  # the configured guess: a minute
    ticket, _ = send(store, clock)
    first_reset = math.ceil(clock.now + 3)
    store.complete(ticket, SEARCH, rate(9, first_reset))
    assert next(r for r in store.buckets() if r["resource"] == "search")["window_s"] == 60.0
    clock.now = first_reset + 0.2
    ticket, _ = send(store, clock)  # sent in a projected (guessed) window of the next minute
    store.complete(ticket, SEARCH, rate(9, first_reset + 4))  # the headers: a 4 s jump
    clock.now = first_reset + 1.0
    store.complete(None, SEARCH, rate(9, first_reset + 3))  # a late answer: not a jump
    other = make_store(tmp_path, clock, pid=2)  # another worker, same configured guess
    other.define(SEARCH, BucketSpec(10, 60.0))
    other.reserve(SEARCH)
    assert next(r for r in other.buckets() if r["resource"] == "search")["window_s"] == 4.0
    clock.now = first_reset + 10  # idle: a longer jump says nothing shorter
    other.complete(None, SEARCH, rate(9, first_reset + 15))
    assert next(r for r in other.buckets() if r["resource"] == "search")["window_s"] == 4.0


def test_a_reset_that_moves_while_no_window_runs_teaches_no_window(tmp_path: Path) -> None:
    """Between windows GitHub's reset is "a window from now" and moves with the clock: on 304s
    (free), on /rate_limit and on limit answers. Only a counted request opens a window, so
    only its answer's reset is a window's end that a jump can be measured from."""
    clock = Clock()
    store = make_store(tmp_path, clock)
    store.define(SEARCH, BucketSpec(10, 60.0))
    ticket, _ = send(store, clock)
    first_reset = math.ceil(clock.now + 60)
    store.complete(ticket, SEARCH, rate(9, first_reset))
    clock.now = first_reset + 5  # the window is over; nothing has opened the next one
    for _ in range(3):  # a round of unchanged pages, 2 s apart: each says "60 s from now"
        ticket, _ = send(store, clock)
        store.complete(ticket, SEARCH, rate(10, math.ceil(clock.now + 60)), counted=False)
        clock.now += 2
    store.probe_result("anonymous", {"search": rate(10, math.ceil(clock.now + 60))})
    clock.now += 2
    store.limited(None, SEARCH, rate(10, math.ceil(clock.now + 60)), SECONDARY, 1.0)
    row = next(r for r in store.buckets() if r["resource"] == "search")
    assert row["window_s"] == 60.0
    # Still ten requests a minute, evenly: not ten every two seconds.
    clock.now += 2
    slots = [store.reserve(SEARCH).slot_at for _ in range(3)]
    assert [round(b - a, 3) for a, b in itertools.pairwise(slots)] == [6.0, 6.0]


def test_a_fresh_start_does_not_learn_a_window_from_its_probe(tmp_path: Path) -> None:
    """The probe of a fresh state meets no window running: its reset is "a window from now".
    The first request opens one a moment later, and its reset can be a second further: that
    second is no window (it was learned as one, so the pace became ten a second)."""
    clock = Clock(1_000_000.8)
    store = make_store(tmp_path, clock)
    store.define(SEARCH, BucketSpec(10, 5.0, probe=True))
    ticket = store.reserve(SEARCH)
    assert store.claim(ticket).probe
    store.probe_result("anonymous", {"search": rate(10, math.ceil(clock.now + 5))})
    clock.now += 0.3
    assert store.claim(ticket).go
    store.complete(ticket, SEARCH, rate(9, math.ceil(clock.now + 5)))  # one second later
    slots = [store.reserve(SEARCH).slot_at for _ in range(3)]
    assert [round(b - a, 3) for a, b in itertools.pairwise(slots)] == [0.5, 0.5]


class GitHubWindows:
    """GitHub's primary limit on the fake clock: a window opens with the first counted request
    after the previous reset and resets ``window`` later, rounded up to a whole second."""

    def __init__(self, limit: int, window: float, spent_until: float) -> None:
        self.limit, self.window = limit, window
        self.reset, self.used = spent_until, limit  # spent at the start
        self.violations = 0

    def answer(self, now: float) -> RateHeaders:
        """Count one request and return its answer's headers."""
        if now >= self.reset:
            self.reset, self.used = math.ceil(now + self.window), 0
        if self.used >= self.limit:
            self.violations += 1
        self.used += 1
        return rate(max(0, self.limit - self.used), self.reset, limit=self.limit)

    def probe(self, now: float) -> RateHeaders:
        if now >= self.reset:
            return rate(self.limit, math.ceil(now + self.window), limit=self.limit)
        return rate(max(0, self.limit - self.used), self.reset, limit=self.limit)


def run_workers(tmp_path: Path, clock: Clock, github: GitHubWindows, *, workers: int,
                at_once: int, until: float, latency: float = 0.2) -> list[tuple[float, int]]:
    """``workers`` processes on one budget, each with ``at_once`` requests waiting or in
    flight, as the budget middleware drives it (sleep to the ticket's slot in chunks of at
    most a second, reading the slot again; claim; probe when told); each answer arrives
    ``latency`` later and its worker books the next request. Returns (send time, worker)."""
    stores = []
    for pid in range(workers):
        store = make_store(tmp_path, clock, pid=pid)
        store.define(SEARCH, BucketSpec(github.limit, github.window, probe=True))
        stores.append(store)
    events: list[tuple[float, int, int, Any, RateHeaders | None]] = []
    order = itertools.count()

    def wake(at: float, worker: int, ticket: Any, answer: RateHeaders | None = None) -> None:
        heapq.heappush(events, (at, next(order), worker, ticket, answer))

    for worker in range(workers):
        for _ in range(at_once):
            ticket = stores[worker].reserve(SEARCH)
            wake(ticket.slot_at, worker, ticket)
    sent = []
    while events and events[0][0] < until:
        at, _, worker, ticket, answer = heapq.heappop(events)
        clock.now = max(clock.now, at)
        store = stores[worker]
        if answer is not None:
            store.complete(ticket, SEARCH, answer)
            ticket = store.reserve(SEARCH)
            wake(ticket.slot_at, worker, ticket)
            continue
        slot = store.slot_of(ticket)
        if slot > clock.now:
            wake(min(slot, clock.now + 1.0), worker, ticket)
            continue
        claim = store.claim(ticket)
        if claim.probe:
            store.probe_result("anonymous", {"search": github.probe(clock.now)})
            wake(clock.now, worker, ticket)
        elif not claim.go:
            wake(claim.slot_at, worker, ticket)
        else:
            sent.append((clock.now, worker))
            wake(clock.now + latency, worker, ticket, github.answer(clock.now))
    return sent


@pytest.mark.parametrize("at_once", [1, 3])
def test_eight_workers_share_every_window_from_a_spent_start(tmp_path: Path,
                                                            at_once: int) -> None:
    """The budget's rules behind test_eight_workers_spend_the_budget_without_tripping_it, on a
    fake clock over many windows: nothing before the reset, every window used whole, never
    over, and every worker gets its turn: no worker wins the slots after a reset."""
    clock = Clock(1_000_000.3)
    reset = math.ceil(clock.now + 8)
    github = GitHubWindows(20, 10.0, spent_until=reset)
    sent = run_workers(tmp_path, clock, github, workers=8, at_once=at_once,
                       until=reset + 20 * 11)
    assert github.violations == 0
    assert sent[0][0] >= reset + TIMING.reset_guard
    windows: list[list[int]] = []  # the workers of each window the server opened, in order
    opened = -math.inf
    for at, worker in sent:
        if at >= opened:
            opened = math.ceil(at + 10.0)
            windows.append([])
        windows[-1].append(worker)
    complete = windows[:-1]
    assert len(complete) >= 18 and all(len(w) == 20 for w in complete)
    counts = [sum(w.count(worker) for w in complete) for worker in range(8)]
    assert max(counts) - min(counts) <= at_once, counts  # one share each
    # Whoever sends first after a reset, it is not always the same worker.
    assert len({w[0] for w in complete}) > 1
    if at_once == 1:  # one request at a time: every worker in every window
        assert all(set(w) == set(range(8)) for w in complete)


def test_304_costs_nothing(tmp_path: Path) -> None:
    clock = Clock()
    store = make_store(tmp_path, clock)
    ticket, _ = send(store, clock)
    store.complete(ticket, SEARCH, rate(7, clock.now + 4))
    ticket, _ = send(store, clock)
    store.complete(ticket, SEARCH, RateHeaders(), counted=False)  # 304 without headers
    ticket, _ = send(store, clock)
    store.complete(ticket, SEARCH, RateHeaders())  # a counted answer without headers
    row = next(r for r in store.buckets() if r["resource"] == "search")
    assert row["remaining"] == 6 and row["in_flight"] == 0 and row["waiting"] == 0


def test_pause_order_is_githubs() -> None:
    now, guard = 100.0, 0.5
    options = {"reset_guard": guard, "backoff_start": 60.0, "backoff_max": 400.0}
    with_all = RateHeaders(remaining=0, reset=150.0)
    assert pause_for(now, SECONDARY, with_all, 7.0, 0, **options).until == 107.0
    assert pause_for(now, PRIMARY, with_all, None, 0, **options).until == 150.5
    some_left = RateHeaders(remaining=3, reset=150.0)
    backoffs = []
    previous = 0.0
    for _ in range(5):
        decision = pause_for(now, SECONDARY, some_left, None, previous, **options)
        backoffs.append(decision.until - now)
        previous = decision.doubling
    assert backoffs == [60, 120, 240, 400, 400]


def test_limited_pauses_everyone_logs_once_and_doubles_per_episode(tmp_path: Path) -> None:
    clock = Clock()
    store = make_store(tmp_path, clock, backoff_start=60.0)
    other = make_store(tmp_path, clock, pid=2)
    one, _ = send(store, clock)
    two, _ = send(other, clock)
    left = rate(4, clock.now + 30)
    first = store.limited(one, SEARCH, left, SECONDARY, None)
    second = other.limited(two, SEARCH, left, SECONDARY, None)  # same episode, in flight
    assert first.new and not second.new
    assert first.until == second.until == pytest.approx(clock.now + 60)
    waiting = other.reserve(SEARCH)
    assert waiting.slot_at >= first.until
    # Still limited after the pause: twice as long; a success then starts again at a minute.
    clock.now = first.until
    three, _ = send(store, clock)
    again = store.limited(three, SEARCH, left, SECONDARY, None)
    assert again.new and again.until == pytest.approx(clock.now + 120)
    clock.now = again.until
    four, _ = send(store, clock)
    store.complete(four, SEARCH, rate(3, clock.now + 30))
    five, _ = send(store, clock)
    assert store.limited(five, SEARCH, left, SECONDARY, None).until == pytest.approx(
        clock.now + 60)


def pause(store: BudgetStore, key: BucketKey, seconds: float) -> PauseResult:
    """A secondary rate-limit answer with ``retry-after: seconds``, as GitHub sends it."""
    return store.limited(None, key, RateHeaders(), "secondary", seconds)


def test_claim_during_a_pause_waits_it_out(tmp_path: Path) -> None:
    clock = Clock()
    store = make_store(tmp_path, clock)
    ticket = store.reserve(SEARCH)
    assert pause(store, SEARCH, 30).new is True
    assert pause(store, SEARCH, 20).new is False  # already paused: not new
    claim = store.claim(ticket)
    assert not claim.go and claim.slot_at >= clock.now + 30


def test_primary_limit_waits_for_reset(tmp_path: Path) -> None:
    clock = Clock()
    store = make_store(tmp_path, clock)
    ticket, _ = send(store, clock)
    result = store.limited(ticket, SEARCH, rate(0, clock.now + 12), PRIMARY, None)
    assert result.until == pytest.approx(clock.now + 12.5) and "remaining 0" in result.reason


def test_dead_workers_tickets_are_dropped(tmp_path: Path) -> None:
    clock = Clock()
    alive = {1: True, 2: True}
    dead_one = make_store(tmp_path, clock, pid=2, alive=lambda p: alive[p])
    for _ in range(5):
        dead_one.reserve(SEARCH)
    alive[2] = False
    store = make_store(tmp_path, clock, pid=1, alive=lambda p: alive[p])
    assert store.reserve(SEARCH).slot_at == clock.now  # the dead worker's bookings are gone


def test_web_pace_and_probe_handover(tmp_path: Path) -> None:
    clock = Clock()
    store = make_store(tmp_path, clock)
    slots = [send(store, clock, WEB)[1] for _ in range(3)]
    assert [round(y - x, 3) for x, y in itertools.pairwise(slots)] == [2.0, 2.0]

    probing = make_store(tmp_path / "p", clock, pid=1)
    probing.define(SEARCH, BucketSpec(10, 5.0, probe=True))
    waiting = make_store(tmp_path / "p", clock, pid=2)
    waiting.define(SEARCH, BucketSpec(10, 5.0, probe=True))
    mine, theirs = probing.reserve(SEARCH), waiting.reserve(SEARCH)
    assert probing.claim(mine).probe  # unknown state: one worker asks /rate_limit
    clock.now = theirs.slot_at
    held = waiting.claim(theirs)
    assert not held.go and not held.probe  # the other waits for that answer
    probing.probe_result("anonymous", {"search": rate(0, clock.now + 9)})
    claim = probing.claim(mine)
    assert not claim.go and claim.slot_at >= clock.now + 9.5  # spent: wait for the reset


def test_header_and_response_reading() -> None:
    headers = {"x-ratelimit-limit": "30", "x-ratelimit-remaining": "0",
               "x-ratelimit-reset": "1700000000", "x-ratelimit-resource": "Search"}
    parsed = RateHeaders.parse(headers.get)
    assert parsed == RateHeaders(30, 0, 1700000000.0, None, "search") and parsed.complete
    assert retry_after_seconds("12") == 12.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after_seconds("soon") is None
    some = RateHeaders(remaining=5)
    assert limit_kind(403, parsed, None, "") == PRIMARY
    assert limit_kind(403, some, None, "API rate limit exceeded for 1.2.3.4") == PRIMARY
    assert limit_kind(403, some, None, "You have exceeded a secondary rate limit") == SECONDARY
    assert limit_kind(403, some, 30.0, "") == SECONDARY
    assert limit_kind(429, some, None, "") == SECONDARY
    assert limit_kind(403, some, None, "Resource not accessible by integration") is None
    assert limit_kind(404, parsed, 3.0, "rate limit") is None
    token_id = identity_for_token("ghp_secret")
    assert "ghp_secret" not in token_id and len(token_id) == 64
    assert identity_label(token_id) == f"token …{token_id[-4:]}"
    assert identity_label(identity_for_token(None)) == "anonymous"


def test_status_rows(tmp_path: Path) -> None:
    clock = Clock(time.time())
    layout = DataLayout(tmp_path / "data")
    assert budget_rows(layout) == [] and render_budget([]) == ["github budget: not used yet"]
    layout.state_dir.mkdir(parents=True)
    store = BudgetStore(layout.budget_db, TIMING, clock=clock, alive=lambda p: True)
    token_key = BucketKey(identity_for_token("ghp_secret"), "search")
    store.define(token_key, BucketSpec(30, 60.0))
    ticket, _ = send(store, clock, token_key)
    store.complete(ticket, token_key, rate(12, clock.now + 40, limit=30))
    pause(store, token_key, 90)
    rows = budget_rows(layout, now=clock.now)
    assert rows == [{
        "resource": "search", "identity": f"token …{token_key.identity[-4:]}",
        "unlimited": False, "limit": 30,
        "window": 60.0, "remaining": 12, "resets_in": pytest.approx(40), "source": "headers",
        "paused_until": clock.now + 90, "pause_reason": "secondary rate limit: retry-after 90s",
        "waiting": 0, "in_flight": 0,
    }]
    text = "\n".join(render_budget(rows, now=clock.now))
    assert "30/60s" in text and "retry-after 90s" in text and "ghp_secret" not in text


# --- real workers against the fake API ----------------------------------------------------------

WINDOW, LIMIT = 5.0, 10  # short windows keep the file near two minutes
RUN_WINDOW, RUN_LIMIT = 10.0, 20  # the example, for the long run of (a) and (b)
RUN_WINDOWS, RESET_IN = 4, 3.0
WORKERS = 8
SECONDARY_WORKERS = 4  # the pause is shared by every worker: four show it as well as eight


def configure(collector: Collector, fake: FakeServer, queries: list[str], *,
              per_page: int = 10, limit: int = LIMIT, window: float = WINDOW) -> None:
    collector.configure(github=fake, spiders={"search": {"queries": queries,
                                                         "per_page": per_page}})
    config = yaml.safe_load(collector.config_path.read_text())
    config["github"]["limits"] = {"search": {"limit": limit, "window": window}}
    collector.config_path.write_text(yaml.safe_dump(config, sort_keys=False))


def huge_queries(n: int = WORKERS) -> list[str]:
    # "huge" pages for long (100 pages of 10 per query): every shard has work all test long.
    return [f"huge topic{i}" for i in range(n)]


def search_requests(fake: FakeServer) -> list[dict[str, Any]]:
    requests = [r for r in fake.stats()["requests"] if r["path"].startswith("/search/")]
    return sorted(requests, key=lambda r: r["t"])


def stop(process: subprocess.Popen[str], timeout: float = 30) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_for(predicate: Any, timeout: float, step: float = 0.25) -> None:
    deadline = time.time() + timeout
    while not predicate():
        if time.time() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(step)


def warm_up(fake: FakeServer, queries: list[str]) -> None:
    """Ask the fake each query once, then forget those requests and their windows. Its first
    answer to a "huge" query builds 5000 repositories (about half a second of CPU, seconds on
    a loaded machine), holding up every other answer meanwhile: met inside a window, that
    stall would be taken for the budget's (the fake logs each request as it handles it)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for q in queries:
        query = urlencode({"q": q, "sort": "stars", "order": "desc", "per_page": 1})
        with opener.open(f"{fake.url('api')}/search/repositories?{query}", timeout=60) as answer:
            answer.read()
    fake.control(reset_limits=True, reset_stats=True)


def booked_workers(collector: Collector) -> int:
    """How many worker processes have a GitHub request booked in the budget."""
    path = DataLayout(collector.data_dir).budget_db
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            return conn.execute("SELECT COUNT(DISTINCT pid) FROM tickets").fetchone()[0]
    except sqlite3.OperationalError:  # not made yet
        return 0


@pytest.fixture(scope="module")
def spent_start_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One run for (a) and (b): the budget is spent when 8 runner workers start; they run
    through the reset and then RUN_WINDOWS windows."""
    home = tmp_path_factory.mktemp("budget-run")
    fake = start_fake_github(home / "fake", search_limit=RUN_LIMIT, search_window=RUN_WINDOW)
    try:
        collector = Collector(home / "collector")
        configure(collector, fake, huge_queries(), limit=RUN_LIMIT, window=RUN_WINDOW)
        warm_up(fake, huge_queries())
        # The claim is eight workers on one budget, so all eight crawl at once whatever the
        # machine's CPU: how many may is the pool's decision, proved in test_autoscale.py.
        collector.update_config({"autoscale": {"min_concurrency": WORKERS}})
        # Spent, and /rate_limit held, until every worker has booked its first request: the
        # reset then comes RESET_IN later however long a loaded machine took to start them.
        fake.control(exhaust={"resource": "search", "reset_in": 3600}, hold_probes=True)
        runner = collector.start_runner("--workers", str(WORKERS), "--spiders", "search")
        try:
            # The store is read only once the first worker has made it and asks /rate_limit:
            # a read-only reader during its creation cost the workers "disk I/O error" once.
            wait_for(lambda: fake.control()["probes_waiting"], 120)
            wait_for(lambda: booked_workers(collector) == WORKERS, 120)
            config = fake.control(exhaust={"resource": "search", "reset_in": RESET_IN},
                                  hold_probes=False)
            reset = time.time() + config["exhausted"]["*|search"]
            time.sleep(max(0.0, reset - time.time()) + RUN_WINDOWS * (RUN_WINDOW + 1) + 1)
        finally:
            stopped_at = time.time()
            stop(runner)
        yield {"fake": fake, "collector": collector, "reset": reset, "stopped_at": stopped_at,
               "requests": search_requests(fake), "stats": fake.stats(),
               "runner": runner.communicate()}
    finally:
        fake.stop()


def test_spent_budget_at_start_no_request_before_reset(spent_start_run: dict[str, Any]) -> None:
    requests, reset = spent_start_run["requests"], spent_start_run["reset"]
    assert requests, spent_start_run["runner"]
    assert requests[0]["t"] >= reset, f"first search request {reset - requests[0]['t']:.2f}s early"
    assert not [r for r in requests if r["status"] in (403, 429)]
    # Full pace after: the first window after the reset is used whole, evenly.
    first = fake_windows(requests, RUN_WINDOW)[0]
    assert first[0] - reset < 1.0
    inside = [r["t"] for r in requests if first[0] <= r["t"] < first[1]]
    assert len(inside) == RUN_LIMIT
    # Paced, not a burst and then a wall: spread over the window, and no 2 s holds more than
    # the pace's 4 (5 with the jitter of the arrivals) and one more (a worker the scheduler
    # woke late sends right before the next one's slot: one short gap, which says nothing of
    # the budget's slots).
    pace = RUN_WINDOW / RUN_LIMIT
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(inside)]
    assert inside[-1] - inside[0] >= 0.8 * (RUN_LIMIT - 1) * pace, gaps
    assert max(sum(1 for t in inside if a <= t < a + 4 * pace) for a in inside) <= 6, gaps


def test_eight_workers_spend_the_budget_without_tripping_it(
        spent_start_run: dict[str, Any]) -> None:
    requests, stats = spent_start_run["requests"], spent_start_run["stats"]
    assert stats["violations"] == 0 and stats["secondary_violations"] == 0
    assert not [r for r in requests if r["status"] in (403, 429)]
    end = spent_start_run["stopped_at"]
    complete = [w for w in fake_windows(requests, RUN_WINDOW) if w[1] <= end]
    assert len(complete) >= RUN_WINDOWS - 1
    answered = sum(1 for r in requests if r["status"] in (200, 304)
                   and complete[0][0] <= r["t"] < complete[-1][1])
    used = answered / (len(complete) * RUN_LIMIT)
    # The same figure on the wall clock, where the fake's whole-second resets cost up to 1 s of
    # each window (GitHub's do too): reported, and held to that ceiling.
    span = complete[-1][1] - complete[0][0]
    wall = answered / (span / RUN_WINDOW * RUN_LIMIT)
    print(f"budget used: {used:.1%} of {len(complete)} fake windows × {RUN_LIMIT}; "
          f"{wall:.1%} of wall-clock windows ({span:.1f}s)")
    assert used >= 0.90
    assert wall >= 0.95 * RUN_WINDOW / (RUN_WINDOW + 1)
    # Every worker got its share of the one budget.
    shards = {r["query"].split("topic", 1)[1].split("&", 1)[0] for r in requests}
    assert len(shards) == WORKERS


def stop_all(processes: list[subprocess.Popen[str]], timeout: float = 30) -> None:
    """SIGTERM to every one at once, then wait for each: they close side by side."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        stop(process, timeout)


def test_secondary_limit_all_workers_wait_it_out(collector: Collector,
                                                 fake_github_factory: Any) -> None:
    fake = fake_github_factory(search_limit=LIMIT, search_window=WINDOW)
    configure(collector, fake, huge_queries(SECONDARY_WORKERS))
    warm_up(fake, huge_queries(SECONDARY_WORKERS))
    shards = [f"{i}/{SECONDARY_WORKERS}" for i in range(SECONDARY_WORKERS)]
    workers = [collector.start_crawl("search", shard) for shard in shards]
    pause = 4.0

    def resumed() -> bool:  # a window's worth served after the pause, the limited pages too
        requests = search_requests(fake)
        after = [r["query"] for r in requests if r["t"] >= until and r["status"] == 200]
        return len(after) >= LIMIT and all(r["query"] in after for r in requests
                                           if r["status"] == 403)

    try:
        wait_for(lambda: sum(r["status"] == 200 for r in search_requests(fake)) >= 3, 60)
        fake.control(secondary={"resource": "search", "seconds": pause})
        until = time.time() + pause
        wait_for(resumed, pause + 4 * (WINDOW + 1))
    finally:
        stop_all(workers)
    requests, stats = search_requests(fake), fake.stats()
    limited = [r for r in requests if r["status"] == 403]
    assert limited, "the secondary limit was never met"
    first = limited[0]["t"]
    # Only what was already in flight meets the limit; nobody sends during the pause.
    assert stats["secondary_ignored"] == 0
    assert len(limited) <= 2
    during = [r for r in requests if first + 1.0 < r["t"] < until]  # the fake's own grace
    assert not during, f"{len(during)} requests during the pause"
    after = [r for r in requests if r["t"] >= until]
    assert sum(r["status"] == 200 for r in after) >= LIMIT
    # The limited pages were sent again, not dropped.
    for r in limited:
        assert any(a["query"] == r["query"] and a["status"] == 200 for a in after)
    logs = "".join(collector.log("search", shard) for shard in shards)
    assert logs.count("paused for all workers") == 1  # logged once, by the first to see it
    assert stats["violations"] == 0


def test_trending_shares_one_polite_pace_and_backs_off(collector: Collector,
                                                      fake_github: FakeServer) -> None:
    interval, pause = 0.4, 3.0
    configure(collector, fake_github, ["few"])
    config = yaml.safe_load(collector.config_path.read_text())
    config["github"]["web_min_interval"] = interval
    collector.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    workers = [collector.start_crawl("trending", f"{i}/2") for i in range(2)]
    # GitHub's "secondary rate limit" page, as a 429 with retry-after, as soon as the workers
    # ask: set then, not before they start (a loaded machine can take longer than the pause
    # to start them, and no page would meet it).
    wait_for(lambda: fake_github.stats()["requests"], 60, step=0.05)
    fake_github.control(web_secondary={"seconds": pause, "status": 429})
    until = time.time() + pause
    for worker in workers:
        worker.communicate(timeout=90)
        assert worker.returncode == 0
    web = sorted((r for r in fake_github.stats()["requests"] if r["app"] == "web"),
                 key=lambda r: r["t"])
    limited = [r for r in web if r["status"] == 429]
    assert 1 <= len(limited) <= 2  # what was in flight when the limit began, no more
    # Nothing sent after the first limit until the pause is over; the one in flight beside it
    # is limited too and may arrive late on a loaded machine (it is counted above).
    assert not [r for r in web if r not in limited and limited[0]["t"] + 1.0 < r["t"] < until]
    served = [r for r in web if r["status"] == 200]
    assert len(served) == 12  # 4 languages × 3 periods: the limited pages were sent again
    gaps = [b["t"] - a["t"] for a, b in itertools.pairwise(served)]
    assert min(gaps) >= interval - 0.05  # two workers, one pace
    logs = collector.log("trending", "0/2") + collector.log("trending", "1/2")
    assert logs.count("paused for all workers") == 1


LEAK_SPIDER = '''
import os
from urllib.parse import quote

import scrapy

from scraper.utils.sharding import Shard


class RedirectSpider(scrapy.Spider):
    name = "redirects"
    shard = Shard(0, 1)
    uses_github_token = True  # an API spider, as the search spider is

    async def start(self):
        api, web = os.environ["FAKE_API"], os.environ["FAKE_WEB"]
        yield scrapy.Request(f"{api}/redirect-to?url={quote(web + '/trending?since=daily')}")
        yield scrapy.Request(f"{web}/redirect-to?url={quote(api + '/search/repositories?q=few')}")
        yield scrapy.Request(f"{api}/search/repositories?q=few+more")

    def parse(self, response):
        self.logger.info("got %s %s", response.status, response.url)
'''


def test_token_never_reaches_another_host_even_after_redirects(
        collector: Collector, fake_github: FakeServer, tmp_path: Path) -> None:
    configure(collector, fake_github, ["few"], limit=100, window=60)
    # Through `scrapy crawl`, which resolves the config and the token into the settings.
    (tmp_path / "leak_spider.py").write_text(textwrap.dedent(LEAK_SPIDER))
    env = collector.env(GITHUB_TOKEN="ghp_leakcheck", FAKE_API=fake_github.url("api"),
                        FAKE_WEB=fake_github.url("web"), PYTHONPATH=f"{tmp_path}:{REPO_ROOT}")
    result = subprocess.run(
        [*SCRAPY, "crawl", "redirects", "-s", "SPIDER_MODULES=leak_spider",
         "-s", "ITEM_PIPELINES={}"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-3000:]
    log = (collector.data_dir / "logs" / "redirects-0of1.log").read_text()
    stats = fake_github.stats()
    web = [r for r in stats["requests"] if r["app"] == "web"]
    api = [r for r in stats["requests"] if r["app"] == "api"]
    assert {r["path"] for r in web} == {"/trending", "/redirect-to"}
    assert stats["auth_seen_on_web"] == 0 and not any(r["auth"] for r in web)
    assert {r["path"] for r in api} >= {"/redirect-to", "/search/repositories"}
    assert all(r["auth"] for r in api)
    assert "ghp_leakcheck" not in result.stderr + result.stdout + log


def rate_limit(fake: FakeServer) -> dict[str, Any]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(fake.url("api") + "/rate_limit", timeout=10) as response:
        return json.loads(response.read())["resources"]["search"]


def test_unchanged_pages_cost_nothing_the_second_time(collector: Collector,
                                                      fake_github: FakeServer) -> None:
    configure(collector, fake_github, ["few stars", "few forks"], limit=100, window=60)
    first = collector.crawl("search", "0/1", timeout=90)
    assert first.returncode == 0, first.stderr[-2000:]
    items = collector.items("search")
    assert len(items) == 14
    used = rate_limit(fake_github)["used"]
    fake_github.control(reset_stats=True)

    second = collector.crawl("search", "0/1", timeout=90)
    assert second.returncode == 0, second.stderr[-2000:]
    statuses = [r["status"] for r in search_requests(fake_github)]
    assert statuses == [304, 304]
    assert rate_limit(fake_github)["used"] == used  # nothing spent
    assert len(collector.items("search")) == 14  # and nothing new yielded
    assert collector.stats("search")["conditional/not_modified"] == 2


def test_bad_credentials_stop_the_worker_with_one_error(collector: Collector,
                                                        fake_github: FakeServer) -> None:
    configure(collector, fake_github, huge_queries(4), limit=100, window=60)
    started = time.time()
    result = collector.crawl("search", "0/1", timeout=60, env=collector.env(GITHUB_TOKEN="bad"))
    took = time.time() - started
    assert result.returncode == NOTHING_FETCHED_EXIT, result.stderr[-2000:]
    assert re.search(r"ended: github_bad_credentials \(nothing new written\); fetched nothing "
                     r"in \d+ requests? \(GitHub answered 401 Bad credentials for the token in "
                     r"\$GITHUB_TOKEN\)\n$", result.stderr), result.stderr
    assert took < 30
    log = collector.log("search")
    errors = [line for line in log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, errors
    assert "401 Bad credentials" in errors[0] and "$GITHUB_TOKEN" in errors[0]
    assert "github_bad_credentials" in log
    requests = [r for r in fake_github.stats()["requests"] if r["app"] == "api"]
    assert len(requests) <= 2  # the /rate_limit probe, at most one page; no retries
    # The token is nowhere under data_dir: not in logs, state, budget or items.
    token = re.compile(rb"(?<![0-9A-Za-z_])bad(?![0-9A-Za-z_])")
    for path in collector.data_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"Bearer bad" not in data and not token.search(data), path


def test_booking_past_the_reset_never_replaces_the_running_window(tmp_path: Path) -> None:
    clock = Clock()
    a, b = make_store(tmp_path, clock, pid=1), make_store(tmp_path, clock, pid=2)
    first, _ = send(a, clock)
    early = b.reserve(SEARCH)  # booked before the answer below came in
    reset = clock.now + 8
    a.complete(first, SEARCH, rate(0, reset))  # spent until the reset
    assert a.reserve(SEARCH).slot_at >= reset + 0.5  # books in the next (projected) window
    clock.now = max(clock.now, early.slot_at)
    claim = b.claim(early)
    assert not claim.go and claim.slot_at >= reset + 0.5
