"""Complete search on the cluster: three runners (separate data dirs) on one real Redis page the
fake GitHub's search universe past its 1000 cap, as one machine does.

Three rounds, as tests/e2e/test_search_complete.py runs them on one machine: a first that plans
(the plan made in Redis, its slices paged by whichever worker takes them), a second after every
repository's stars changed (the plan re-used, cut again where a slice grew), a third with nothing
changed (every page a 304 from the cluster's ETags). The rules of the plan edit and of the lease
handed along a slice run in-process below.
"""

from __future__ import annotations

import collections
import contextlib
import json
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from scraper.slicing.memoryplans import MemorySlicePlanStorage
from scraper.slicing.slices import RESULTS_CAP, Range, Slice, parse_query
from scraper.stores.memory import MemoryOutage, space
from tests.support.cluster import (
    finish,
    runner_in_process,
    runner_workers,
    start_runners,
)
from tests.support.collector import Collector
from tests.support.fakes.github import parse_search, search_results
from tests.support.fakes.launcher import start_fake_github
from tests.support.search import expected_ids, is_probe, search_requests

pytestmark = pytest.mark.timeout(240)

LIMIT, WINDOW = 30, 2.0
QUERIES = ["longtail4000", "huge created:>=2018-01-01"]
BOXES = 3
SETTINGS = {"CONCURRENT_REQUESTS": 2}
"""A worker holds at most 2 slices at once: the others' workers take the rest."""


def configure(box: Collector, fake: Any, url: str) -> None:
    box.configure(github=fake, redis_url=url,
                  spiders={"search": {"queries": QUERIES, "per_page": 100,
                                      "settings": SETTINGS}})
    config = yaml.safe_load(box.config_path.read_text())
    config["github"]["limits"] = {"search": {"limit": LIMIT, "window": WINDOW}}
    box.config_path.write_text(yaml.safe_dump(config, sort_keys=False))


@pytest.fixture(scope="module")
def cluster_rounds(tmp_path_factory: pytest.TempPathFactory,
                   redis_server: Any) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("cluster-search")
    client = redis_server.client()
    client.flushall()
    fake = start_fake_github(home / "fake", search_limit=LIMIT, search_window=WINDOW)
    try:
        boxes = [Collector(home / f"box-{k}") for k in range(BOXES)]
        for box in boxes:
            configure(box, fake, redis_server.url)
        rounds = []
        for generation in (0, 1, 1):
            fake.control(reset_stats=True, generation=generation)
            before = {box.home.name: set(box.item_files("search")) for box in boxes}
            time.sleep(1.2)  # the last round's round_interval (1 s) is over: a new round
            started = time.monotonic()
            results = finish(start_runners(boxes, redis_server.url, "search", workers=1),
                             timeout=200)
            assert [rc for rc, _ in results] == [0] * BOXES, results
            items = {box.home.name: [json.loads(line)
                                     for path in box.item_files("search")
                                     if path not in before[box.home.name]
                                     for line in path.read_text().splitlines()]
                     for box in boxes}
            logs = "".join(p.read_text() for box in boxes
                           for p in (box.data_dir / "logs").glob("search-*.log"))
            rounds.append({"generation": generation, "items": items, "fake": fake.stats(),
                           "requests": search_requests(fake), "logs": logs,
                           "seconds": time.monotonic() - started,
                           "stderr": [err for _, err in results],
                           "plans": {q.decode(): json.loads(v) for q, v in
                                     client.hgetall("hubcollect:search:plans").items()}})
        yield {"rounds": rounds, "boxes": boxes}
    finally:
        fake.stop()


def check_complete(round_: dict[str, Any]) -> None:
    """Every repository of every query once among all boxes, within the budget."""
    ids: dict[str, list[int]] = {query: [] for query in QUERIES}
    for box_items in round_["items"].values():
        for item in box_items:
            ids[item["query"]].append(item["id"])
    for query, found in ids.items():
        expected = expected_ids(query, round_["generation"])
        assert len(expected) > RESULTS_CAP
        twice = [i for i, n in collections.Counter(found).items() if n > 1]
        assert not twice, (query, twice[:5])
        assert set(found) == expected, (query, len(set(found)), len(expected))
    fake = round_["fake"]
    assert fake["violations"] == 0 and fake["secondary_violations"] == 0
    assert not [r for r in round_["requests"] if r["status"] in (403, 422, 429)]
    # Each page of each slice asked once in the round, by one worker of the cluster.
    pages = collections.Counter((r["params"]["q"], r["params"].get("page", "1"))
                                for r in round_["requests"] if not is_probe(r))
    assert max(pages.values()) == 1, [p for p, n in pages.items() if n > 1][:5]
    assert "Traceback" not in round_["logs"]
    assert " ERROR: " not in round_["logs"]


def test_three_runners_collect_every_result_once(cluster_rounds: dict[str, Any]) -> None:
    first = cluster_rounds["rounds"][0]
    check_complete(first)
    print(f"round 1 with {BOXES} runners: {sum(map(len, first['items'].values()))} "
          f"repositories in {first['seconds']:.1f} s")
    assert "not supported in the distributed" not in first["logs"]
    # The work was shared: more than one box wrote part of it.
    assert sum(1 for items in first["items"].values() if items) >= 2, {
        name: len(items) for name, items in first["items"].items()}
    # The plan is the cluster's, in Redis: slices that partition each query.
    for query in QUERIES:
        plan = [Slice.from_json(entry) for entry in first["plans"][query]]
        assert len(plan) >= -(-len(expected_ids(query)) // RESULTS_CAP)  # none above the cap
        keys = {item["slice"] for items in first["items"].values() for item in items
                if item["query"] == query}
        # the query's own first page (None) came before the plan was made
        assert keys == {None} | {piece.qualifiers() for piece in plan}


def test_later_rounds_reuse_the_cluster_plan_and_etags(cluster_rounds: dict[str, Any]) -> None:
    first, second, third = cluster_rounds["rounds"]
    check_complete(second)
    probes = [sum(map(is_probe, r["requests"])) for r in (first, second, third)]
    seconds = [round(r["seconds"], 1) for r in (first, second, third)]
    print(f"probes per round: {probes}; seconds: {seconds}")
    assert probes[1] < probes[0]
    assert "cut into" in second["logs"]  # a slice that grew past the cap, cut again
    # Nothing changed: every page unchanged (304, free), no probe, nothing written.
    assert probes[2] == 0
    assert {r["status"] for r in third["requests"]} == {304}
    assert not any(third["items"].values())
    assert third["plans"] == second["plans"]
    # The plan after the second round's cuts (several boxes cut slices of one query at once)
    # still partitions each query: every repository in exactly one slice.
    for query in QUERIES:
        text, keep = parse_search(query)
        repos = [r for r in search_results(text, 1, "stars", "desc") if keep(r)]
        base = parse_query(query).base
        filters = [parse_search(Slice.from_json(entry).query(base))[1]
                   for entry in second["plans"][query]]
        assert all(sum(1 for f in filters if f(repo)) == 1 for repo in repos), query


def test_the_cluster_ledger_accounts_for_every_query_of_every_round(
        cluster_rounds: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from scraper.utils.ledger import scheduled_fetches

    box = cluster_rounds["boxes"][0]
    code, out = runner_in_process(box, capsys, "gaps", "--json")
    assert code == 0 and json.loads(out) == [], out
    rounds: dict[str, dict[str, str]] = {}
    for fetch in scheduled_fetches(box.data_dir / "state"):
        rounds.setdefault(fetch.round, {})[fetch.key] = fetch.outcome
    # Each query of each round, whichever boxes fetched its pages; the third all 304s.
    assert list(rounds.values()) == [dict.fromkeys(QUERIES, "data")] * 2 + [
        dict.fromkeys(QUERIES, "not_modified")], rounds


# --- the rules, in-process ------------------------------------------------------------------


def stars(lo: int, hi: int | None) -> Slice:
    return Slice(Range(lo, hi))


def test_a_cut_replaces_its_slice_in_place_and_never_twice() -> None:
    from scraper.cluster.searchspider import cut_plan

    plan = [stars(100, None), stars(10, 99), stars(0, 9)]
    pieces = [stars(50, 99), stars(10, 49)]
    assert cut_plan(plan, "stars:10..99", pieces) == [plan[0], *pieces, plan[2]]
    assert cut_plan(plan, "stars:1..2", pieces) is None  # cut by another worker first
    assert cut_plan(None, "stars:10..99", pieces) is None  # the plan is gone: planned afresh
    assert cut_plan(None, "", pieces) == pieces and cut_plan([], "", pieces) == pieces
    assert cut_plan(plan, "", pieces) is None  # the query was planned meanwhile


class RacedPlans(MemorySlicePlanStorage):
    """The memory store, where another worker's write lands right after this one's first
    read."""

    def __init__(self, data: dict[str, Any], race: Callable[[], None]) -> None:
        super().__init__(data)
        self.race: Callable[[], None] | None = race

    def load(self, query: str) -> list[Slice] | None:
        seen = super().load(query)
        if self.race is not None:
            race, self.race = self.race, None
            race()
        return seen


def test_two_workers_cutting_one_plan_both_land() -> None:
    """Two workers' cuts of two slices of one query, each against the plan it read: the
    second compare-and-set fails, reads again, and lands on top of the first."""
    from scraper.cluster.searchspider import cut_plan, edit_plan

    data: dict[str, Any] = {}
    other = MemorySlicePlanStorage(data)
    other.save("q", [stars(100, None), stars(10, 99), stars(0, 9)])
    plans = RacedPlans(data, lambda: edit_plan(other, "q", lambda plan: cut_plan(
        plan, "stars:0..9", [stars(5, 9), stars(0, 4)])))
    written = edit_plan(plans, "q", lambda plan: cut_plan(
        plan, "stars:10..99", [stars(50, 99), stars(10, 49)]))
    assert written == other.load("q") == [stars(100, None), stars(50, 99), stars(10, 49),
                                          stars(5, 9), stars(0, 4)]
    # A cut of a slice the other worker already cut changes nothing.
    assert edit_plan(plans, "q", lambda plan: cut_plan(plan, "stars:0..9", [])) is None
    MemoryOutage.down("away")
    away = MemorySlicePlanStorage(space("away"))
    assert edit_plan(away, "q", lambda plan: []) is None  # the store away: left as it was
    MemoryOutage.back("away")


def test_a_chain_stays_in_its_worker_under_one_lease(redis_url: str) -> None:
    """A request handed on (a slice's next page) is kept out of the shared queue, handed out
    before it, and keeps the entry's lease; the lease is freed once a response's output goes
    on no more."""
    import asyncio

    import redis
    from scrapy import Request
    from scrapy.http import TextResponse

    from scraper.cluster.leases import LEASE_META, LeaseAckSpiderMiddleware, hand_on
    from scraper.cluster.rounds import get_round
    from scraper.cluster.scheduler import RedisScheduler
    from scraper.redis.connection import get_link
    from scraper.redis.keys import Keys
    from tests.support.cluster import crawler_for

    crawler = crawler_for(redis_url)
    scheduler = RedisScheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    spider_round = get_round(get_link(redis_url), Keys(), "t")
    spider_round.joined = True
    client = redis.Redis.from_url(redis_url)
    leases = f"hubcollect:t:leases:{spider_round.worker}"
    assert scheduler.enqueue_request(Request("http://h/slice?page=1"))
    assert scheduler.enqueue_request(Request("http://h/other"))
    entry = scheduler.next_request()
    lease = entry.meta[LEASE_META]
    middleware = LeaseAckSpiderMiddleware(crawler)

    async def parse(response: TextResponse, out: list[Request]) -> list[Any]:
        async def result() -> Any:
            for request in out:
                yield request
        return [element async for element in middleware.process_spider_output(
            response, result())]

    page1 = TextResponse(entry.url, request=entry, body=b"{}")
    (page2,) = asyncio.run(parse(page1, [hand_on(page1, Request(f"{entry.url[:-1]}2"))]))
    assert client.hexists(leases, lease)  # handed on: still leased
    assert scheduler.enqueue_request(page2)
    assert client.zcard("hubcollect:t:requests") == 1  # not shared: only the other entry
    assert scheduler.has_pending_requests() and len(scheduler) == 2
    taken = scheduler.next_request()
    assert taken is page2 and taken.meta[LEASE_META] == lease  # local first
    asyncio.run(parse(TextResponse(taken.url, request=taken, body=b"{}"), []))
    assert not client.hexists(leases, lease)  # the chain ended: freed
    scheduler.close("finished")


# --- a box killed mid-slice -------------------------------------------------------------------


def held_search_leases(client: Any, workers: set[str]) -> int:
    """Search entries these workers hold leased now."""
    return sum(client.hlen(f"hubcollect:search:leases:{worker}") for worker in workers)


def written(box: Collector) -> list[dict[str, Any]]:
    """Closed item files and, for a killed box, the one it was writing (a torn line skipped)."""
    rows = []
    for path in sorted((box.data_dir / "items" / "search").glob("*.jsonl*")):
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                rows.append(json.loads(line))
    return rows


def test_a_box_killed_mid_slice_loses_no_result(tmp_path: Any, redis_server: Any,
                                                fake_github_factory: Any) -> None:
    from tests.support.cluster import send_all, tree

    redis_server.client().flushall()
    fake = fake_github_factory(search_limit=LIMIT, search_window=WINDOW)
    boxes = [Collector(tmp_path / f"box-{k}") for k in range(BOXES)]
    for box in boxes:
        configure(box, fake, redis_server.url)
        box.update_config({"spiders": {"search": {"queries": ["longtail2600"], "settings": {
            **SETTINGS, "DISTRIBUTED_LEASE": 3.0}}}})
    procs = start_runners(boxes, redis_server.url, "search", workers=1)
    client = redis_server.client()
    deadline = time.time() + 90
    victim = None
    while victim is None:  # freeze a box that pages a slice, then kill -9 all of it
        assert time.time() < deadline, "no box was caught holding a slice"
        for proc in procs:
            frozen = tree(proc)
            send_all(frozen, signal.SIGSTOP)
            workers = runner_workers(client, proc.pid)
            if len(search_requests(fake)) >= 8 and held_search_leases(client, workers):
                victim = proc
                break
            send_all(frozen, signal.SIGCONT)
        time.sleep(0.05)
    send_all(frozen, signal.SIGKILL)
    victim.wait()
    dead = procs.index(victim)
    left = [box for k, box in enumerate(boxes) if k != dead]
    results = finish([proc for proc in procs if proc is not victim], timeout=200)
    assert [rc for rc, _ in results] == [0] * (BOXES - 1), results

    expected = expected_ids("longtail2600")
    ids = [item["id"] for box in left for item in box.items("search")]
    twice = [i for i, n in collections.Counter(ids).items() if n > 1]
    assert not twice, twice[:5]
    # What the dead box wrote before the kill, and what the others paged again of its slices.
    found = {i["id"] for box in boxes for i in written(box)}
    assert found <= expected
    # Content the dead box had claimed but not written is taken over (its busy marker lapsed)
    # by the box that pages the slice again: nothing of the query is missing.
    stats = [box.stats("search") for box in left]
    taken = sum(s.get("contenthash/claims_taken_over", 0) for s in stats)
    print(f"missing {len(expected - found)}, dead box's claims taken over {taken}")
    assert found == expected, sorted(expected - found)[:10]
    logs = "".join(box.log("search") for box in left)
    assert "Traceback" not in logs and " ERROR: " not in logs, [
        line for line in logs.splitlines() if " ERROR: " in line or "Error" in line][:20]
    assert sum(s.get("distributed/leases_reclaimed", 0) for s in stats) >= 1
    assert fake.stats()["violations"] == 0
