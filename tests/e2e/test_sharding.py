"""Shards: ``-a shard=i/N`` takes entries i, i+N, …; the union of all shards is the unsharded run.

The docs test runs every shard as its own ``scrapy crawl`` process, all at the same time, in one
collector home (one set of stores, shared by the shards at once), and the unsharded run in
another home (its own data dir); the search and trending tests run the same rounds one after
the other in this process (tests/support/incrawler.py): what they add is each spider's partition.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from scraper.utils.sharding import UNSHARDED, Shard, ShardError
from tests.support.collector import Collector, wait_for
from tests.support.fakes.launcher import FakeServer
from tests.support.incrawler import crawl_round

# --- unit ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "index", "count"), [
    ("0/1", 0, 1), ("3/4", 3, 4), ("0/20", 0, 20), (" 1/2 ", 1, 2), ("07/10", 7, 10),
])
def test_parse_valid(text: str, index: int, count: int) -> None:
    shard = Shard.parse(text)
    assert (shard.index, shard.count) == (index, count)
    assert str(shard) == f"{index}/{count}"
    assert shard.slug == f"{index}of{count}"


@pytest.mark.parametrize("text", [
    "4/4", "5/4", "-1/3", "a/b", "0/0", "1", "", "1/", "/3", "1/2/3", "0/-1", "1.0/2", "½/2",
    "0 / 2", None, 3,
])
def test_parse_invalid(text: Any) -> None:
    with pytest.raises(ShardError) as raised:
        Shard.parse(text)
    message = str(raised.value)
    assert "\n" not in message
    assert repr(text) in message
    assert "0 ≤ i < N" in message


def test_unsharded_is_0_of_1() -> None:
    assert Shard(0, 1) == UNSHARDED
    assert UNSHARDED.select(list("abc")) == list("abc")


def test_select_by_index_modulo() -> None:
    entries = list(range(10))
    assert Shard(0, 3).select(entries) == [0, 3, 6, 9]
    assert Shard(1, 3).select(entries) == [1, 4, 7]
    assert Shard(2, 3).select(entries) == [2, 5, 8]
    assert Shard(3, 4).select(["a", "b"]) == []
    assert Shard(1, 2).select(("x", "y", "z")) == ["y"]


def test_shards_partition_any_list() -> None:
    for length, count in itertools.product(range(13), range(1, 8)):
        entries = [f"e{i}" for i in range(length)]
        parts = [Shard(i, count).select(entries) for i in range(count)]
        merged = sorted(itertools.chain.from_iterable(parts), key=entries.index)
        assert merged == entries, (length, count)  # union, nothing twice
        assert sum(map(len, parts)) == length
        # Balanced: sizes differ by at most one.
        assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_shards_sort_by_index_within_count() -> None:
    assert sorted([Shard(2, 4), Shard(0, 4), Shard(1, 4)]) == [Shard(0, 4), Shard(1, 4),
                                                                Shard(2, 4)]


# --- end to end ----------------------------------------------------------------------------------

# Generous API limits on the fake and as the config's first guess: the shared GitHub budget
# then never makes a test wait.
FAKE_LIMITS = {"search_limit": 1000, "core_limit": 5000, "core_window": 60}
LIMITS = {"search": {"limit": 1000, "window": 60}, "core": {"limit": 5000, "window": 60}}


def run_sharded_and_unsharded(sharded: Collector, unsharded: Collector, spider: str,
                              count: int, server: FakeServer) -> None:
    """All shards of ``spider`` and one unsharded run, every process at the same time:
    ``server`` holds every request until each shard has opened its round, however long a
    busy machine takes to start one process after another."""
    server.control(hold=True)
    procs = [sharded.start_crawl(spider, f"{i}/{count}") for i in range(count)]
    procs.append(unsharded.start_crawl(spider))
    try:
        wait_for(lambda: all(sharded.worker_state_path(spider, f"{i}/{count}").exists()
                             for i in range(count)) or any(p.poll() is not None for p in procs),
                 60, f"every {spider} shard to open its round")
    finally:
        server.control(hold=False)
    results = Collector.wait_all(procs, timeout=120)
    for result in results:
        assert result.returncode == 0, (result.args, result.stderr[-3000:])
    # The shards really ran at the same time: every one started before any one finished.
    states = [sharded.worker_state(spider, f"{i}/{count}") for i in range(count)]
    assert all(state["finished"] == "finished" for state in states), states
    assert max(s["started_at"] for s in states) < min(s["updated_at"] for s in states)
    for i in range(count):
        assert sharded.log(spider, f"{i}/{count}"), f"no log for {spider} {i}/{count}"
        assert not sharded.stats(spider, f"{i}/{count}").get("log_count/ERROR")
    assert not unsharded.stats(spider).get("log_count/ERROR")


def run_shards_in_process(sharded: Collector, unsharded: Collector, spider: str,
                          count: int) -> None:
    """Every shard of ``spider``, then the unsharded run, as rounds in this process."""
    for i in range(count):
        stats = crawl_round(spider, sharded.config_path, shard=f"{i}/{count}")
        assert not stats.get("log_count/ERROR"), stats
    assert not crawl_round(spider, unsharded.config_path).get("log_count/ERROR")


def assert_partition(shard_items: list[list[dict[str, Any]]], whole: list[dict[str, Any]],
                     key: Any) -> None:
    keys = [{key(item) for item in items} for items in shard_items]
    hashes = [{item["content_hash"] for item in items} for items in shard_items]
    assert all(keys), "a shard collected nothing"
    for a, b in itertools.combinations(range(len(keys)), 2):
        assert not keys[a] & keys[b], f"shards {a} and {b} overlap"
        assert not hashes[a] & hashes[b], f"shards {a} and {b} overlap"
    assert set().union(*keys) == {key(item) for item in whole}
    assert set().union(*hashes) == {item["content_hash"] for item in whole}
    # No duplicates inside a shard either.
    assert sum(map(len, shard_items)) == len(whole)


def items_per_shard(collector: Collector, spider: str, count: int) -> list[list[dict]]:
    items = collector.items(spider)
    per_shard: list[list[dict]] = [[] for _ in range(count)]
    for item in items:
        index, of = map(int, item["shard"].split("/"))
        assert of == count
        per_shard[index].append(item)
    # Each shard wrote only its own item file.
    for name in (path.name for path in collector.item_files(spider)):
        assert name.startswith(f"{spider}-") and "of" in name
    return per_shard


@pytest.mark.timeout(150)
def test_docs_shards_run_together_equal_the_unsharded_run(tmp_path, fake_docs_factory) -> None:
    docs = fake_docs_factory(sites=5, pages=8, latency_ms=5)
    start_urls = [f"{docs.url()}/site{k}/" for k in range(5)]
    sharded, unsharded = Collector(tmp_path / "sharded"), Collector(tmp_path / "unsharded")
    for home in (sharded, unsharded):
        home.configure(docs_urls=start_urls)
    run_sharded_and_unsharded(sharded, unsharded, "docs", 3, docs)

    whole = unsharded.items("docs")
    per_shard = items_per_shard(sharded, "docs", 3)
    assert_partition(per_shard, whole, key=lambda item: item["url"])
    # Shard i crawled exactly the sites i, i+3, …
    for index, items in enumerate(per_shard):
        sites = {item["url"].split("/")[3] for item in items}
        assert sites == {f"site{k}" for k in range(index, 5, 3)}, (index, sites)
    assert {item["shard"] for item in whole} == {"0/1"}


@pytest.mark.timeout(150)
def test_search_shards_equal_the_unsharded_run(tmp_path, fake_github_factory) -> None:
    github = fake_github_factory(**FAKE_LIMITS, latency_ms=5)
    queries = ["few", "alpha", "beta", "gamma"]
    sharded, unsharded = Collector(tmp_path / "sharded"), Collector(tmp_path / "unsharded")
    for home in (sharded, unsharded):
        home.configure(github=github, spiders={"search": {"queries": queries}})
        home.update_config({"github": {"limits": LIMITS}})
    run_shards_in_process(sharded, unsharded, "search", 2)

    whole = unsharded.items("search")
    assert len(whole) == 7 + 3 * 250
    per_shard = items_per_shard(sharded, "search", 2)
    assert_partition(per_shard, whole, key=lambda item: (item["query"], item["id"]))
    assert {item["query"] for item in per_shard[0]} == {"few", "beta"}
    assert {item["query"] for item in per_shard[1]} == {"alpha", "gamma"}


@pytest.mark.timeout(150)
def test_trending_shards_equal_the_unsharded_run(tmp_path, fake_github_factory) -> None:
    github = fake_github_factory(**FAKE_LIMITS, latency_ms=5)
    languages, periods = ["", "python", "rust"], ["daily", "weekly", "monthly"]
    sharded, unsharded = Collector(tmp_path / "sharded"), Collector(tmp_path / "unsharded")
    for home in (sharded, unsharded):
        home.configure(github=github, spiders={"trending": {"languages": languages,
                                                            "periods": periods}})
        home.update_config({"github": {"limits": LIMITS}})
    run_shards_in_process(sharded, unsharded, "trending", 3)

    whole = unsharded.items("trending")
    per_shard = items_per_shard(sharded, "trending", 3)

    def key(item: dict) -> tuple:
        # A page snapshot (``rows``) stands for its page; a repository row for itself.
        return item["trending_language"], item["period"], item.get("full_name", "(page)")

    assert_partition(per_shard, whole, key=key)
    entries = [(lang, period) for lang in languages for period in periods]
    assert {(item["trending_language"], item["period"]) for item in whole} == set(entries)
    for index, items in enumerate(per_shard):
        mine = {(item["trending_language"], item["period"]) for item in items}
        assert mine == set(entries[index::3]), (index, mine)

