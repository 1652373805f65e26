"""The store contract (scraper/stores/base.py), run against every implementation: the in-memory
stores, the SQLite ones on this machine, and the Redis ones on a real redis-server on loopback.

Each store is built as the components build it: from its ``*_STORAGE`` setting with Scrapy's
``build_from_crawler``. Two stores built for the same backend (memory space, data dir, Redis)
are what two workers see.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scraper.budget.limits import RateHeaders
from scraper.budget.store import BucketKey, BucketSpec
from scraper.slicing.slices import Range, Slice
from scraper.stores.base import StoreUnavailable, build_store
from scraper.stores.memory import MemoryOutage
from tests.support.cluster import REDIS_SERVER, RedisServer, free_port
from tests.support.incrawler import MEMORY, project_crawler

REDIS = {
    "DELTAFETCH_STORAGE": "scraper.dedup.redisurls.RedisDeltaFetchStore",
    "CONTENTHASH_STORAGE": "scraper.dedup.redishashes.RedisContentHashStore",
    "BUDGET_STORAGE": "scraper.budget.redisbudget.RedisBudgetStore",
    "ETAG_STORAGE": "scraper.budget.redisetags.RedisEtagStore",
    "SLICEPLAN_STORAGE": "scraper.slicing.redisplans.RedisSlicePlanStore",
}
BACKENDS = ["memory", "sqlite", "redis"]


class Backend:
    """Builds stores of one kind for "workers" sharing one backend."""

    def __init__(self, kind: str, settings: dict[str, Any]) -> None:
        self.kind = kind
        self.settings = settings

    def crawler(self, **more: Any) -> Any:
        return project_crawler(**{**self.settings, **more})

    def store(self, setting: str, **more: Any) -> Any:
        return build_store(self.crawler(**more), setting)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    base: dict[str, Any] = {"COLLECTOR_DATA_DIR": str(tmp_path / "data")}
    if request.param == "memory":
        return Backend("memory", {**base, **MEMORY, "MEMORY_STORAGE_SPACE": str(tmp_path)})
    if request.param == "sqlite":
        return Backend("sqlite", base)
    server = request.getfixturevalue("redis_server")
    server.client().flushall()
    return Backend("redis", {**base, **REDIS, "REDIS_URL": server.url})


def flushed(store: Any) -> None:
    """Writes a Redis store queued (write-behind) have reached Redis."""
    writes = getattr(store, "writes", None)
    if writes is not None:
        assert writes.flush()


# --- deltafetch -----------------------------------------------------------------------------------


def test_deltafetch_records_links_and_shares_them(backend: Backend) -> None:
    a, b = backend.store("DELTAFETCH_STORAGE"), backend.store("DELTAFETCH_STORAGE")
    for store in (a, b):
        store.open_spider("docs", None)
    assert a.get(b"\x01") is None and a.links(b"\x01") == []
    a.record(b"\x01", "123.5", ["http://h/a", "http://h/b"])
    a.record(b"\x02", "124.0")  # no links given: none stored
    flushed(a)
    assert b.get(b"\x01") == "123.5" and b.links(b"\x01") == ["http://h/a", "http://h/b"]
    assert b.get(b"\x02") == "124.0" and b.links(b"\x02") == []
    a.record(b"\x01", "130.0", ["http://h/c"])  # recorded again: the newer record wins
    flushed(a)
    assert b.get(b"\x01") == "130.0" and b.links(b"\x01") == ["http://h/c"]
    other = backend.store("DELTAFETCH_STORAGE")
    other.open_spider("search", None)
    assert other.get(b"\x01") is None  # one store per spider
    for store in (a, b, other):
        store.close_spider()


# --- content hash ---------------------------------------------------------------------------------


def test_contenthash_claim_confirm_release(backend: Backend) -> None:
    a = backend.store("CONTENTHASH_STORAGE")
    a.open_spider("docs", "")
    assert a.claim("aa")
    a.release("aa")
    assert a.claim("aa")  # released: may be claimed again
    a.confirm("aa", "2026-01-02T00:00:00Z")
    flushed(a)
    b = backend.store("CONTENTHASH_STORAGE")
    b.open_spider("docs", "")
    assert not b.claim("aa")  # written: a duplicate for every later store
    reset = backend.store("CONTENTHASH_STORAGE")
    reset.open_spider("docs", "2026-01-03T00:00:00Z")  # CONTENTHASH_RESET: older hashes unseen
    assert reset.claim("aa")
    other = backend.store("CONTENTHASH_STORAGE")
    other.open_spider("search", "")
    assert other.claim("aa")  # one store per spider
    for store in (a, b, reset, other):
        store.close_spider()


# --- ETags ----------------------------------------------------------------------------------------


def test_etags_are_remembered_per_identity(backend: Backend) -> None:
    a, b = backend.store("ETAG_STORAGE"), backend.store("ETAG_STORAGE")
    assert a.get("id1", "http://api/x") is None
    a.remember("id1", {"http://api/x": ("W/\"1\"", "<http://api/x?page=2>; rel=\"next\""),
                       "http://api/y": ("\"2\"", None)})
    assert b.get("id1", "http://api/x") == ("W/\"1\"", "<http://api/x?page=2>; rel=\"next\"")
    assert b.get("id1", "http://api/y") == ("\"2\"", None)
    assert b.get("id2", "http://api/x") is None  # another token's ETags are its own
    a.close()
    b.close()


# --- slice plans ----------------------------------------------------------------------------------

PLAN = [Slice(Range(0, 99)), Slice(Range(100, None))]
OTHER = [Slice(Range(0, 9)), Slice(Range(10, None))]


def test_slice_plans_are_whole_and_replaced_atomically(backend: Backend) -> None:
    a, b = backend.store("SLICEPLAN_STORAGE"), backend.store("SLICEPLAN_STORAGE")
    assert a.load("q") is None
    a.save("q", PLAN)
    assert b.load("q") == PLAN
    a.save("small", [])
    assert b.load("small") == []  # a query that fits: planned, unsliced
    # Compare and set: of two workers that both saw PLAN, exactly one replaces it.
    assert a.replace("q", PLAN, OTHER)
    assert not b.replace("q", PLAN, [Slice(Range(5, None))])
    assert b.load("q") == OTHER
    assert a.replace("new", None, PLAN) and not b.replace("new", None, OTHER)
    assert b.load("new") == PLAN
    a.close()
    b.close()


def test_slice_plans_race_to_one_winner(backend: Backend) -> None:
    """Many replace() calls from the same expected plan: exactly one wins."""
    stores = [backend.store("SLICEPLAN_STORAGE") for _ in range(4)]
    stores[0].save("q", PLAN)
    wins = [store.replace("q", PLAN, [Slice(Range(i, None))]) for i, store in enumerate(stores)]
    assert wins == [True, False, False, False]
    assert stores[3].load("q") == [Slice(Range(0, None))]


# --- budget ---------------------------------------------------------------------------------------


# The memory budget is one process's own, not shared (its rules: tests/e2e/test_budget.py).
@pytest.mark.parametrize("backend", ["sqlite", "redis"], indirect=True)
def test_budget_books_and_shares_what_it_learns(backend: Backend) -> None:
    key = BucketKey("anon", "search")
    a, b = backend.store("BUDGET_STORAGE"), backend.store("BUDGET_STORAGE")
    for store in (a, b):
        store.define(key, BucketSpec(10, 60.0, probe=False))
    ticket = a.reserve(key)
    assert a.claim(ticket).go
    a.complete(ticket, key, RateHeaders(limit=10, remaining=7, reset=time.time() + 60,
                                        used=3, resource="search"), counted=True, success=True)
    seen = {(bucket["identity"], bucket["resource"]): bucket for bucket in b.buckets()}
    assert seen[("anon", "search")]["remaining"] == 7  # what one worker learnt, all know
    for store in (a, b):
        store.release_process()
        store.close()


# --- the outage contract --------------------------------------------------------------------------

CALLS: dict[str, Callable[[Any], Any]] = {
    "DELTAFETCH_STORAGE": lambda store: store.get(b"\x01"),
    "CONTENTHASH_STORAGE": lambda store: store.claim("aa"),
    "ETAG_STORAGE": lambda store: store.get("id", "http://api/x"),
    "SLICEPLAN_STORAGE": lambda store: store.load("q"),
    "BUDGET_STORAGE": lambda store: store.reserve(BucketKey("anon", "core")),
}


def opened(setting: str, store: Any) -> Any:
    if setting == "DELTAFETCH_STORAGE":
        store.open_spider("docs", None)
    elif setting == "CONTENTHASH_STORAGE":
        store.open_spider("docs", "")
    elif setting == "BUDGET_STORAGE":
        store.define(BucketKey("anon", "core"), BucketSpec(60, 3600.0, probe=False))
    return store


@pytest.mark.parametrize("setting", sorted(CALLS))
def test_a_local_store_is_always_up(setting: str, tmp_path: Path) -> None:
    store = opened(setting, build_store(project_crawler(COLLECTOR_DATA_DIR=str(tmp_path)),
                                        setting))
    assert store.up
    assert asyncio.run(store.wait_until_up(lambda: True))
    CALLS[setting](store)


@pytest.mark.parametrize("setting", sorted(CALLS))
def test_a_store_away_raises_and_says_so_until_it_is_back(setting: str, tmp_path: Path) -> None:
    space = str(tmp_path)
    store = opened(setting, build_store(project_crawler(
        **MEMORY, MEMORY_STORAGE_SPACE=space, COLLECTOR_DATA_DIR=str(tmp_path)), setting))
    MemoryOutage.down(space)
    with pytest.raises(StoreUnavailable):
        CALLS[setting](store)
    assert not store.up
    assert not asyncio.run(store.wait_until_up(lambda: True))  # told to stop: gives up
    MemoryOutage.back(space)
    assert asyncio.run(store.wait_until_up(lambda: False))
    CALLS[setting](store)


@pytest.mark.parametrize("setting", sorted(CALLS))
def test_a_redis_store_away_raises_and_is_used_again_once_back(
        setting: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    if REDIS_SERVER is None:
        pytest.skip("redis-server not found on PATH")
    server = RedisServer(tmp_path_factory.mktemp("redis-outage"))
    server.start()
    try:
        crawler = project_crawler(**REDIS, REDIS_URL=server.url,
                                  COLLECTOR_DATA_DIR=str(tmp_path))
        store = opened(setting, build_store(crawler, setting))
        server.stop()
        with pytest.raises(StoreUnavailable):
            CALLS[setting](store)
        assert not store.up
        assert not asyncio.run(store.wait_until_up(lambda: True))
        server.start()
        deadline = time.monotonic() + 15  # the link's backoff lets a probe through by then
        while True:
            try:
                CALLS[setting](store)
                break
            except StoreUnavailable:
                assert time.monotonic() < deadline, "the store was never used again"
                time.sleep(0.1)
        assert store.up
    finally:
        server.stop()


def test_a_redis_store_nobody_answers_is_away_at_once(tmp_path: Path) -> None:
    store = build_store(project_crawler(**REDIS, REDIS_URL=f"redis://127.0.0.1:{free_port()}/0",
                                        COLLECTOR_DATA_DIR=str(tmp_path)), "ETAG_STORAGE")
    with pytest.raises(StoreUnavailable):
        store.get("id", "http://api/x")
    assert not store.up
