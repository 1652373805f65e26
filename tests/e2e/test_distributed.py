"""The distributed mode (issue 7) against a real ``redis-server`` started here on loopback.

The server runs on a random port with ``--save "" --appendonly no`` in a temporary directory.
Unit tests drive our scrapy-redis subclasses and stores in-process; end-to-end tests run two
real ``python -m runner`` (two "machines": separate data dirs and pidfiles) on one Redis against
the fake docs site and the fake GitHub, and judge by what the fakes saw.
"""

from __future__ import annotations

import collections
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cluster import (
    OUTAGE_LINE,
    PAGES,
    REDIS_SERVER,
    SITES,
    RedisServer,
    configure_docs,
    crawler_for,
    finish,
    hold_site_until_all_joined,
    items_of,
    page_counts,
    runner_in_process,
    start_runners,
    status_json,
    worker_logs,
)
from tests.support.collector import Collector, wait_for

pytestmark = [
    pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not found on PATH (install it: "
                       "apt-get install redis-server; .ci/run does)"),
    pytest.mark.timeout(120),
]
redis = pytest.importorskip("redis", reason="the distributed mode needs redis-py")
pytest.importorskip("scrapy_redis", reason="the distributed mode needs scrapy-redis")

# --- unit: our scrapy-redis subclasses --------------------------------------------------------


class QueryBlindFingerprinter:
    """A project fingerprinter that ignores the query string: upstream's sha1 would not."""

    @classmethod
    def from_crawler(cls, crawler: Any) -> QueryBlindFingerprinter:
        return cls()

    def fingerprint(self, request: Any) -> bytes:
        import hashlib

        return hashlib.sha1(request.url.split("?")[0].encode()).digest()


def test_dupefilter_uses_the_project_fingerprinter(redis_url: str) -> None:
    from scrapy import Request

    from scraper.cluster.dupefilter import RedisDupeFilter

    crawler = crawler_for(redis_url, REQUEST_FINGERPRINTER_CLASS=(
        f"{__name__}.QueryBlindFingerprinter"))
    dupefilter = RedisDupeFilter.from_spider(crawler.spider)
    first, second = Request("http://h/a?x=1"), Request("http://h/a?x=2")
    assert not dupefilter.request_seen(first)
    assert dupefilter.request_seen(second), "the project's fingerprinter was not used"
    client = redis.Redis.from_url(redis_url)
    stored = {m.decode() for m in client.smembers("hubcollect:t:dupefilter")}
    assert stored == {crawler.request_fingerprinter.fingerprint(first).hex()}
    # What upstream would have computed differs: the regression this test exists for.
    from scrapy_redis.dupefilter import RFPDupeFilter

    upstream = RFPDupeFilter(None, "k")
    assert upstream.request_fingerprint(first) != upstream.request_fingerprint(second)


def test_scheduler_persists_queue_and_dupefilter_after_close(redis_url: str) -> None:
    from scrapy import Request

    from scraper.cluster.rounds import get_round
    from scraper.cluster.scheduler import RedisScheduler
    from scraper.redis.connection import get_link
    from scraper.redis.keys import Keys

    crawler = crawler_for(redis_url)
    scheduler = RedisScheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    assert scheduler.enqueue_request(Request("http://h/1"))
    assert scheduler.enqueue_request(Request("http://h/2"))
    assert not scheduler.enqueue_request(Request("http://h/1"))  # shared dupefilter
    scheduler.close("finished")
    client = redis.Redis.from_url(redis_url)
    # scrapy-redis deletes both on close unless SCHEDULER_PERSIST: other workers still use them.
    assert client.zcard("hubcollect:t:requests") == 2
    assert client.scard("hubcollect:t:dupefilter") == 2
    # A second worker takes the requests over once it has joined the round; its pop marks it
    # busy in the round.
    other = RedisScheduler.from_crawler(crawler_for(redis_url))
    other.open(crawler.spider)
    assert other.next_request() is None  # not joined yet: nothing taken
    assert client.zcard("hubcollect:t:requests") == 2
    get_round(get_link(redis_url), Keys(), "t").joined = True
    assert other.next_request().url in ("http://h/1", "http://h/2")
    assert client.zcard("hubcollect:t:busy") == 1


def test_async_start_reads_start_entries_from_redis(redis_url: str) -> None:
    """scrapy-redis only has start_requests (never called by Scrapy ≥ 2.16): our start() must
    be an async generator that seeds the round and reads the entries back."""
    import asyncio
    import inspect

    from scrapy_redis.spiders import RedisMixin

    from scraper.cluster.spider import DistributedSpider
    from scraper.cluster.spiderloader import distributed_class
    from spiders.docs import DocsSpider

    assert not hasattr(RedisMixin, "start") or RedisMixin.start is not DistributedSpider.start
    wrapped = distributed_class(DocsSpider)
    assert inspect.isasyncgenfunction(wrapped.start)
    assert wrapped.start is DistributedSpider.start
    assert wrapped.__mro__.index(DistributedSpider) < wrapped.__mro__.index(DocsSpider)
    # A real crawl proves the entries are consumed by start(), not the spider_idle path:
    # see test_two_runners_share_the_docs_site (distributed/start_entries/start).
    assert asyncio.iscoroutinefunction(DistributedSpider._join_or_seed)


def test_calls_whose_answer_was_lost_are_made_again_safely(redis_url: str) -> None:
    """A stopped Redis runs what it had received once it resumes, while the worker has timed
    out: every call the worker then makes again must neither lose nor double what it did."""
    from scrapy import Request

    from scraper.cluster.rounds import SpiderRound
    from scraper.cluster.scheduler import RedisScheduler
    from scraper.dedup.redishashes import RedisContentHashStore
    from scraper.redis.connection import RedisLink
    from scraper.redis.keys import Keys
    from scraper.redis.writebehind import WriteBehind

    crawler = crawler_for(redis_url)
    scheduler = RedisScheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    request = Request("http://h/page")
    assert scheduler._enqueue(request)  # ran, but say its answer was lost: made again
    assert not scheduler._enqueue(request)  # "seen" now — and queued, not lost
    client = redis.Redis.from_url(redis_url)
    assert client.zcard("hubcollect:t:requests") == 1
    # A pop whose answer is lost is answered again by the retry (same token), not lost.
    spider_round = SpiderRound(RedisLink(redis_url), Keys(), "t")
    token = spider_round._pop_token
    first = spider_round.pop_request("hubcollect:t:requests")
    spider_round._pop_token = token
    assert spider_round.pop_request("hubcollect:t:requests") == first is not None
    assert spider_round.pop_request("hubcollect:t:requests") is None  # a new pop: empty
    # A content-hash claim asked again by its holder is still its claim.
    link = RedisLink(redis_url)
    store = RedisContentHashStore(link, Keys(), "t", WriteBehind(link, None), owner="a",
                                  claim_ttl=600)
    assert store.claim("d") and store.claim("d")


def test_content_hash_claims_are_atomic_and_confirmed_after_write(redis_url: str) -> None:
    from scraper.dedup.redishashes import RedisContentHashStore
    from scraper.redis.connection import RedisLink
    from scraper.redis.keys import Keys
    from scraper.redis.writebehind import WriteBehind

    link = RedisLink(redis_url)
    writes = WriteBehind(link, None)
    a = RedisContentHashStore(link, Keys(), "docs", writes, owner="a", claim_ttl=60)
    b = RedisContentHashStore(link, Keys(), "docs", writes, owner="b", claim_ttl=60)
    busy = "hubcollect:docs:busy"  # a worker with an item in flight is busy (its leases)
    link.client.zadd(busy, {"a": time.time() + 60})
    assert a.claim("d1") and not b.claim("d1")  # in flight on a: b must not write it too
    assert 0 < link.client.ttl("hubcollect:docs:claim:d1") <= 60
    b.release("d1")  # not b's claim: a compare-and-delete leaves it
    assert not b.claim("d1")
    a.confirm("d1", "2026-01-01T00:00:00Z")
    assert "d1" in a and not link.client.exists("hubcollect:docs:claim:d1")
    assert not b.claim("d1") and not a.claim("d1")  # written: a duplicate for everyone
    assert a.claim("d2")
    a.release("d2")  # not written after all: free for the others at once
    assert b.claim("d2")
    # a was killed holding a claim: once its busy marker lapses (its leases go back), the
    # worker that meets the content again takes the claim over and writes it.
    assert a.claim("d3") and not b.claim("d3")
    link.client.zadd(busy, {"a": time.time() - 1})
    assert b.claim("d3") and b.taken_over == 1
    assert link.client.get("hubcollect:docs:claim:d3") == b"b"
    link.client.zadd(busy, {"b": time.time() + 60})
    assert not a.claim("d3")  # b's now, while b is busy
    link.client.zrem(busy, "a", "b")
    assert a.claim("d4") and b.claim("d4")  # a holder with no marker at all is gone too


def test_deltafetch_records_expire_after_refresh_after(redis_url: str) -> None:
    from scraper.dedup.redisurls import RedisDeltaFetchStore
    from scraper.redis.connection import RedisLink
    from scraper.redis.defaults import LINKS_TTL_MARGIN
    from scraper.redis.keys import Keys
    from scraper.redis.writebehind import WriteBehind

    link = RedisLink(redis_url)
    store = RedisDeltaFetchStore(link, Keys(), WriteBehind(link, None), "docs", 100.0)
    store.record(b"\x01", "123.5", ["http://h/a", "http://h/b"])
    assert store.get(b"\x01") == "123.5"
    assert store.links(b"\x01") == ["http://h/a", "http://h/b"]
    record_ttl = link.client.ttl("hubcollect:docs:deltafetch:01")
    links_ttl = link.client.ttl("hubcollect:docs:links:01")
    assert 99 <= record_ttl <= 101
    assert links_ttl > record_ttl + LINKS_TTL_MARGIN - 5  # a skipped page keeps its links


def test_writes_wait_for_redis_and_spill_at_close(redis_url: str, tmp_path: Path) -> None:
    from scraper.redis.connection import RedisLink
    from scraper.redis.writebehind import WriteBehind

    link = RedisLink("redis://127.0.0.1:9/0")  # nothing listens: every write must wait
    spill = tmp_path / "docs-0of1.pending.jsonl"
    writes = WriteBehind(link, spill)
    assert not writes.submit(["SET", "k1", "v1"])
    writes.close()
    assert spill.exists() and spill.stat().st_mode & 0o777 == 0o600  # private, as all state
    # The next start of that shard, with Redis there, sends them.
    again = WriteBehind(RedisLink(redis_url), spill)
    assert not again.pending and not spill.exists()
    assert redis.Redis.from_url(redis_url).get("k1") == b"v1"


def test_bad_lines_in_a_spill_file_are_skipped_and_counted(redis_url: str,
                                                           tmp_path: Path) -> None:
    """A spill file with lines that are not writes (text, a list of numbers, a command Redis
    refuses) fails no start: the good lines are sent, the others skipped and counted."""
    from scraper.redis.connection import RedisLink
    from scraper.redis.writebehind import WriteBehind

    spill = tmp_path / "docs-0of1.pending.jsonl"
    spill.write_text("\n".join([json.dumps([["SET", "k1", "v1"]]), "{torn", "[1, 2, 3]",
                                "[[\"SET\"]]", json.dumps([["NOSUCHCOMMAND", "x"]]),
                                "[" * 5000, json.dumps([["SET", "k2", "v2"]])]) + "\n")
    writes = WriteBehind(RedisLink(redis_url), spill)
    assert not writes.pending and not spill.exists()
    assert writes.skipped == 5
    client = redis.Redis.from_url(redis_url)
    assert (client.get("k1"), client.get("k2")) == (b"v1", b"v2")


@pytest.mark.parametrize("refusal", ["oom", "readonly"])
def test_a_redis_that_refuses_writes_is_an_outage_and_nothing_is_lost(
        redis_url: str, tmp_path: Path, refusal: str,
        caplog: pytest.LogCaptureFixture) -> None:
    """``maxmemory`` with ``noeviction`` (OOM), a failover onto a replica (READONLY): the link
    pauses with one line, the writes wait, and go out once Redis takes writes again (it still
    answers PING meanwhile, so only a write can tell)."""
    from scraper.cluster.registry import RunnerBeacon
    from scraper.redis.connection import RedisLink, RedisUnavailable
    from scraper.redis.writebehind import WriteBehind

    admin = redis.Redis.from_url(redis_url)
    link = RedisLink(redis_url, backoff_start=0.05, backoff_max=0.1)
    writes = WriteBehind(link, tmp_path / "docs-0of1.pending.jsonl")
    admin.set("filler", "x" * 1024)
    if refusal == "oom":
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", "1")  # anything is over it: every write is refused
    else:
        admin.replicaof("127.0.0.1", "9")  # nothing listens there: a replica for good
    try:
        with caplog.at_level(logging.WARNING, logger="scraper.cluster"):
            with pytest.raises(RedisUnavailable):
                link.client.set("k0", "v0")
            assert not link.up and link.refusing
            assert not writes.submit(["SET", "k1", "v1"], ["HSET", "h", "f", "v"])
            for _ in range(5):
                time.sleep(0.12)
                assert not link.probe()  # PING would answer: the probe writes
            beacon = RunnerBeacon(redis_url)  # the runner's heartbeat: it must not die of it
            beacon.beat({"pid": 4242}, force=True)
            assert beacon.state["state"] == "unreachable"
        lines = [r.getMessage() for r in caplog.records if "refuses writes" in r.getMessage()]
        assert len(lines) == 1, lines  # the worker's link: one line for the whole outage
    finally:
        if refusal == "oom":
            admin.config_set("maxmemory", "0")
        else:
            admin.replicaof("NO", "ONE")
    time.sleep(0.12)
    assert link.probe() and link.up
    assert not writes.pending  # flushed on the way up
    assert (admin.get("k1"), admin.hget("h", "f")) == (b"v1", b"v")


def robots_scenario(middleware_class: type) -> list[str]:
    """Three requests to one host arrive while its robots.txt is being fetched."""
    import asyncio
    from types import SimpleNamespace

    from scrapy import Request
    from scrapy.exceptions import IgnoreRequest
    from scrapy.http import TextResponse
    from scrapy.settings import Settings

    async def scenario() -> list[str]:
        fetched = asyncio.Event()

        async def download_async(request: Any) -> Any:
            await fetched.wait()
            return TextResponse(request.url, body=b"User-agent: *\nDisallow: /private/\n")

        async def send_catch_log_async(**kwargs: Any) -> list[Any]:
            return []

        crawler = SimpleNamespace(
            settings=Settings({"ROBOTSTXT_OBEY": True, "USER_AGENT": "hubcollect",
                               "ROBOTSTXT_PARSER": "scrapy.robotstxt.ProtegoRobotParser"}),
            stats=SimpleNamespace(inc_value=lambda *a, **k: None), spider=None,
            engine=SimpleNamespace(download_async=download_async),
            signals=SimpleNamespace(send_catch_log_async=send_catch_log_async))
        middleware = middleware_class(crawler)
        urls = ["http://h/index.html", "http://h/private/a.html", "http://h/private/b.html"]
        tasks = [asyncio.ensure_future(middleware.process_request(Request(u))) for u in urls]
        await asyncio.sleep(0.01)
        fetched.set()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        return [u for u, o in zip(urls, outcomes, strict=True)
                if not isinstance(o, IgnoreRequest)]

    return asyncio.run(scenario())


def test_requests_waiting_for_robots_txt_obey_it() -> None:
    """A worker joining a crawl takes a batch of queued pages of one host at once: all of them
    wait for that host's robots.txt, and every one must obey it."""
    from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware

    from scraper.downloadermiddlewares.robotstxt import SharedRobotsTxtMiddleware

    assert robots_scenario(SharedRobotsTxtMiddleware) == ["http://h/index.html"]
    # Scrapy 2.19's own lets the second waiter through; if this fails, Scrapy fixed it and the
    # subclass can go.
    assert "http://h/private/b.html" in robots_scenario(RobotsTxtMiddleware)


# --- unit: the GitHub budget's rules, on Redis ------------------------------------------------


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def budget_store(url: str, clock: Clock, pid: int, alive: Callable[[int], bool] = lambda p: True
                 ) -> Any:
    from scraper.budget.redisbudget import RedisBudgetStore
    from scraper.budget.store import BucketKey, BucketSpec, BudgetTiming
    from scraper.redis.connection import RedisLink
    from scraper.redis.keys import Keys

    store = RedisBudgetStore(RedisLink(url), Keys(), BudgetTiming(0.5, 0.0, 60.0, 3600.0),
                             clock=clock, pid=pid, alive=alive)
    store.define(BucketKey("anonymous", "search"), BucketSpec(10, 5.0))
    return store


def test_budget_store_paces_and_shares_one_budget_between_machines(redis_url: str) -> None:
    from scraper.budget.limits import RateHeaders
    from scraper.budget.store import BucketKey

    search = BucketKey("anonymous", "search")
    clock = Clock()
    a, b = budget_store(redis_url, clock, pid=1), budget_store(redis_url, clock, pid=2)
    # Two "machines" book in turns: one pace, window / limit apart, as on one machine.
    slots = [(a if i % 2 else b).reserve(search).slot_at - clock.now for i in range(10)]
    assert slots == pytest.approx([i * 0.5 for i in range(10)])
    # The eleventh waits for the next (projected) window, whoever asks.
    assert a.reserve(search).slot_at == pytest.approx(clock.now + 5.0 + 1.0 + 0.5)
    # Headers are the truth for both: b's answer says nothing is left.
    ticket = b.reserve(search)
    clock.now = max(clock.now, ticket.slot_at)
    b.release_process()
    fresh = b.reserve(search)
    clock.now = fresh.slot_at
    assert b.claim(fresh).go
    b.complete(fresh, search, RateHeaders(limit=10, remaining=0, reset=clock.now + 3,
                                          resource="search"))
    row = next(r for r in a.buckets() if r["resource"] == "search")
    assert row["remaining"] == 0 and row["source"] == "headers"


def test_budget_store_frees_tickets_of_dead_machines(redis_url: str) -> None:
    from scraper.budget.store import BucketKey

    search = BucketKey("anonymous", "search")
    clock = Clock()
    dead: set[int] = set()
    a = budget_store(redis_url, clock, pid=1, alive=lambda p: p not in dead)
    b = budget_store(redis_url, clock, pid=2, alive=lambda p: p not in dead)
    for _ in range(5):
        a.reserve(search)
    assert b.reserve(search).slot_at == pytest.approx(clock.now + 2.5)
    dead.add(1)  # machine a's process key lapsed
    clock.now += 3.0  # past the cleanup interval
    row = next(r for r in b.buckets() if r["resource"] == "search")
    assert row["waiting"] == 6
    b.reserve(search)
    row = next(r for r in b.buckets() if r["resource"] == "search")
    assert row["waiting"] == 2  # a's five are gone; b's two remain


def test_etag_store_keeps_etags_for_every_machine(redis_url: str) -> None:
    from scraper.budget.redisetags import RedisEtagStore
    from scraper.redis.connection import RedisLink
    from scraper.redis.keys import Keys

    a, b = (RedisEtagStore(RedisLink(redis_url), Keys()) for _ in range(2))
    a.remember("anonymous", {"http://api/search?q=x": ('"e1"', '<http://api/p2>; rel="next"')})
    assert b.get("anonymous", "http://api/search?q=x") == ('"e1"', '<http://api/p2>; rel="next"')
    assert b.get("anonymous", "http://api/other") is None


# --- end to end: two runners, one Redis -----------------------------------------------------------


def two_collectors(tmp_path: Path) -> list[Collector]:
    return [Collector(tmp_path / "machine-a"), Collector(tmp_path / "machine-b")]


@pytest.mark.timeout(300)
def test_two_runners_share_the_docs_site(tmp_path: Path, redis_server: RedisServer,
                                         redis_url: str, baseline: dict[str, Any],
                                         fake_docs_factory: Any,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    # Slow pages, one at a time per worker, and the site held until every worker joined: the
    # first runner's two workers can hold only two of the three start entries, so the other
    # runner's take part, whichever starts first.
    docs = fake_docs_factory(sites=SITES, pages=PAGES, latency_ms=200)
    machines = two_collectors(tmp_path)
    for machine in machines:
        # Requests sent while the site is held wait for it, not time out and go again.
        configure_docs(machine, docs, settings={"CONCURRENT_REQUESTS": 1, "DOWNLOAD_TIMEOUT": 150})
    procs = start_runners(machines, redis_url, "docs")
    hold_site_until_all_joined(docs, redis_server.client(), procs, workers=2)

    def both_runners_seen() -> list[dict[str, Any]] | None:
        assert any(proc.poll() is None for proc in procs), "the runners ended unseen by status"
        code, out = runner_in_process(machines[0], capsys, "status", "--json")
        status = json.loads(out)
        assert code == (0 if status["runner"]["alive"] else 3), out
        runners = (status.get("cluster") or {}).get("runners") or []
        return runners if {r["pid"] for r in runners} >= {p.pid for p in procs} else None

    cluster = wait_for(both_runners_seen, 90, "both runners in the cluster status")
    results = finish(procs)
    assert [rc for rc, _ in results] == [0, 0], results
    status = status_json(machines[1])["cluster"]
    assert status["reachable"] and status["queues"]["docs"]["state"] == "finished"
    assert {r["pid"] for r in cluster} == {p.pid for p in procs}

    # Together they fetched each page exactly as often as one unsharded crawl does (once; the
    # flaky page twice: a 500, then the retry).
    assert page_counts(docs) == baseline["counts"]
    items = items_of(*machines)
    hashes = collections.Counter(item["content_hash"] for item in items)
    assert max(hashes.values()) == 1, "the same content was written twice"
    assert set(hashes) == baseline["hashes"] and len(items) == baseline["items"]
    # The work was shared: every runner's workers fetched part of it.
    assert all(sum(json.loads(p.read_text())["pages"]
                   for p in (m.data_dir / "state" / "workers").glob("docs-*.json"))
               for m in machines)
    # Start entries came through the async start(), seeded once for the cluster.
    stats = [json.loads(p.read_text())["stats"] for m in machines
             for p in (m.data_dir / "state" / "workers").glob("docs-*.json")]
    assert sum(s.get("distributed/seeded_entries", 0) for s in stats) == SITES
    assert sum(s.get("distributed/start_entries/start", 0) for s in stats) == SITES
    assert not any(s.get("distributed/start_entries/idle") for s in stats)


@pytest.mark.timeout(150)
def test_redis_outage_mid_crawl_pauses_and_resumes(tmp_path: Path, redis_server: RedisServer,
                                                   redis_url: str, baseline: dict[str, Any],
                                                   fake_docs_factory: Any,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    docs = fake_docs_factory(sites=SITES, pages=PAGES, latency_ms=250)
    machines = two_collectors(tmp_path)
    for machine in machines:
        configure_docs(machine, docs)
    procs = start_runners(machines, redis_url, "docs")
    try:
        wait_for(lambda: sum(page_counts(docs).values()) >= 15, 30, "the crawl under way")
        redis_server.pause()  # SIGSTOP: connections hang, commands time out
        stopped = time.time()

        def outage_shown() -> dict[str, Any] | None:
            status = json.loads(runner_in_process(machines[0], capsys, "status", "--json")[1])
            return status if status["runner"].get("redis", {}).get("state") == "unreachable" \
                else None

        # The runner's next heartbeat (every RUNNER_BEAT_INTERVAL, 5 s) finds Redis away.
        status = wait_for(outage_shown, 30, "status to show the outage")
        assert status["cluster"]["reachable"] is False
        assert "REDIS UNREACHABLE" in runner_in_process(machines[0], capsys, "status")[1]
        time.sleep(max(0.0, 7 - (time.time() - stopped)))
    finally:
        redis_server.resume()
    results = finish(procs)
    assert [rc for rc, _ in results] == [0, 0], results

    items = items_of(*machines)
    hashes = collections.Counter(item["content_hash"] for item in items)
    assert set(hashes) == baseline["hashes"] and max(hashes.values()) == 1
    logs = {f"{m.home.name}/{name}": text for m in machines
            for name, text in worker_logs(m).items()}
    outage_lines = {name: text.count(OUTAGE_LINE) for name, text in logs.items()}
    assert max(outage_lines.values()) <= 1, outage_lines
    assert sum(outage_lines.values()) >= 1, "no worker noticed the outage"
    assert "Traceback" not in "".join(logs.values())


@pytest.mark.timeout(150)
def test_redis_killed_and_restarted_mid_crawl_both_finish(
        tmp_path: Path, redis_server: RedisServer, redis_url: str, baseline: dict[str, Any],
        fake_docs_factory: Any) -> None:
    docs = fake_docs_factory(sites=SITES, pages=PAGES, latency_ms=250)
    machines = two_collectors(tmp_path)
    for machine in machines:
        configure_docs(machine, docs)
    procs = start_runners(machines, redis_url, "docs")
    wait_for(lambda: sum(page_counts(docs).values()) >= 15, 30, "the crawl under way")
    redis_server.restart(down_for=3)
    results = finish(procs)
    # Both finish. A worker whose only work went with the queue (a page's retry, queued just
    # before the kill) rightly ends its round as one that fetched nothing: exit 1, said so.
    assert all(rc == 0 or (rc == 1 and "fetched nothing" in err) for rc, err in results), results
    assert 0 in [rc for rc, _ in results], results
    # The queue went with Redis (run it with persistence: docs/distributed.md); what the
    # workers held is written, and nothing from outside the site.
    hashes = collections.Counter(item["content_hash"] for item in items_of(*machines))
    assert hashes and set(hashes) <= baseline["hashes"]
    logs = [text for m in machines for text in worker_logs(m).values()]
    assert max(text.count(OUTAGE_LINE) for text in logs) <= 1
    assert "Traceback" not in "".join(logs)


@pytest.mark.timeout(150)
def test_shared_search_budget_holds_across_runners(tmp_path: Path, redis_url: str,
                                                   fake_github_factory: Any) -> None:
    limit, window = 10, 5.0
    github = fake_github_factory(search_limit=limit, search_window=window)
    queries = ["alpha", "beta", "gamma", "delta"]  # 250 results each: 5 pages of 50
    machines = two_collectors(tmp_path)
    for machine in machines:
        machine.configure(github=github, spiders={"search": {"queries": queries,
                                                             "per_page": 50}})
        config = yaml.safe_load(machine.config_path.read_text())
        config["github"]["limits"] = {"search": {"limit": limit, "window": window}}
        machine.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    results = finish(start_runners(machines, redis_url, "search"), timeout=110)
    assert [rc for rc, _ in results] == [0, 0], results
    stats = github.stats()
    searches = [r for r in stats["requests"] if r["path"].startswith("/search/")]
    assert stats["violations"] == 0 and stats["secondary_violations"] == 0
    assert not [r for r in searches if r["status"] in (403, 429)]
    # Each page once for the cluster (shared queue), paced to the one budget.
    assert len(searches) == len(queries) * 5
    # status shows the cluster's budget (from Redis), not a local file's.
    budget = {row["resource"]: row for row in status_json(machines[0])["budget"]}
    assert budget["search"]["limit"] == limit and budget["search"]["identity"] == "anonymous"
    items = items_of(*machines, spider="search")
    assert len(items) == len({(i["query"], i["id"]) for i in items}) == len(queries) * 250
    times = sorted(r["t"] for r in searches)
    for start in times:  # never more than the limit in any window's span
        assert sum(1 for t in times if start <= t < start + window) <= limit


# --- the mode switch ------------------------------------------------------------------------------


def test_bad_redis_urls_are_one_line_errors(collector: Collector) -> None:
    collector.configure()
    result = collector.runner("--workers", "1", "--once", "--redis-url", "http://x")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "--redis-url" in result.stderr
    env = collector.env(COLLECTOR_REDIS_URL="not a url")
    crawl = collector.crawl("docs", None, env=env, timeout=60)
    assert crawl.returncode == 2 and crawl.stderr.strip().startswith("scrapy crawl: $COLLECTOR")


def test_one_machine_mode_without_a_redis_url(collector: Collector) -> None:
    from scraper.config.collector import load_config

    assert load_config(None, environ={}).redis_url is None
    assert load_config(None, environ={"COLLECTOR_REDIS_URL": "redis://h:1/0"}).redis_url == (
        "redis://h:1/0")
    collector.configure()
    result = collector.runner("status")
    assert result.returncode == 3 and "cluster" not in result.stdout  # no runner: exit 3


# --- one dataset whatever the shard plan (issue 15), on Redis ---------------------------------


@pytest.mark.timeout(240)
def test_a_new_plan_and_a_redirect_fetch_nothing_collected_again(
        collector: Collector, redis_url: str, fake_docs_factory: Any) -> None:
    from tests.support.collector import counts, fetched_since, summary

    docs = fake_docs_factory(sites=4, pages=8, redirect=True)
    collector.configure(docs_urls=[f"{docs.url()}/site{k}/" for k in range(4)])
    env = collector.env(COLLECTOR_REDIS_URL=redis_url)
    first = collector.runner("--workers", "3", "--spiders", "docs", "--once", env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    collected = collector.items("docs")
    assert len(collected) == 4 * 9  # per site: 8 pages (page0 = the root) + flaky
    after_first = counts(docs)
    assert all(after_first[f"/site{k}/moved.html"] == 1 for k in range(4))
    # No box keeps a gap ledger: a fetch one box planned may be another's (docs/distributed.md).
    assert not (collector.data_dir / "state" / "ledger").exists()

    time.sleep(1.5)  # the cluster's round_interval: the next run is a new round
    second = collector.runner("--workers", "2", "--spiders", "docs", "--once", env=env)
    assert second.returncode == 0, second.stderr[-3000:]
    assert len(collector.items("docs")) == len(collected)
    assert fetched_since(docs, after_first) == collections.Counter(
        {f"/site{k}/": 1 for k in range(4)})

    time.sleep(1.5)
    after_second = counts(docs)
    third = collector.crawl("docs", "1/5", env=env)
    assert third.returncode == 0, third.stderr[-3000:]
    assert len(collector.items("docs")) == len(collected)
    # One queue for the cluster: the hand-run worker read every site's start page.
    assert fetched_since(docs, after_second) == collections.Counter(
        {f"/site{k}/": 1 for k in range(4)})
    assert summary(third.stderr)[:3] == ("1/5", "4", "0")


def test_a_worker_that_only_read_robots_txt_had_nothing_to_send() -> None:
    """In the cluster a worker may find every page of its round taken by the others or already
    collected once it has read the host's robots.txt: that is no failed round (the runner's
    second round above failed so, 1 run in a few); pages that all fail after it still are."""
    from scraper.utils.outcome import fetched_nothing, stats_problem

    robots_only = {"downloader/request_count": 1, "robotstxt/request_count": 1,
                   "downloader/response_status_count/200": 1,
                   "robotstxt/response_status_count/200": 1}
    assert not fetched_nothing(robots_only) and stats_problem(robots_only) is None
    pages_failed = {**robots_only, "downloader/request_count": 3,
                    "downloader/response_status_count/500": 2}
    assert fetched_nothing(pages_failed)
    assert stats_problem(pages_failed) == "fetched nothing in 3 requests (no answer carried data)"
    # The runner judges a --once round from the worker's record by the same rule.
    from runner.core.health import round_failed
    from scraper.utils.statefile import WorkerRecord

    def record(stats: dict[str, int]) -> WorkerRecord:
        return WorkerRecord(spider="docs", shard="1/2", pid=1, started_at=0.0, updated_at=0.0,
                            finished="finished", stats=stats,
                            requests=stats["downloader/request_count"], ok=0)

    assert round_failed(record(robots_only)) is None
    assert round_failed(record(pages_failed)) == stats_problem(pages_failed)


@pytest.mark.timeout(240)
def test_the_cap_frontier_holds_on_redis(collector: Collector, redis_url: str,
                                         fake_docs_factory: Any) -> None:
    from tests.support.collector import counts, fetched_since

    # 23 pages, 10 a round: the frontier has to carry over twice, so three rounds at least.
    docs = fake_docs_factory(sites=1, pages=20)
    collector.configure(docs_urls=[f"{docs.url()}/site0/"],
                        spiders={"docs": {"max_pages_per_site": 10}})
    env = collector.env(COLLECTOR_REDIS_URL=redis_url)
    site = {"/site0/", "/site0/index.html", "/site0/flaky.html"} | {
        f"/site0/page{i}.html" for i in range(20)}
    seen: set[str] = set()
    rounds = 0
    while rounds < 5 and seen != site:
        rounds += 1
        before = counts(docs)
        result = collector.crawl("docs", None, env=env, timeout=90)
        assert result.returncode == 0, result.stderr[-3000:]
        fetched = fetched_since(docs, before)
        assert len(fetched) <= 10, fetched
        assert all(n == (2 if p.endswith("flaky.html") else 1) for p, n in fetched.items())
        seen |= set(fetched)
        time.sleep(1.2)  # round_interval: the next crawl is a new round
    assert seen == site and rounds >= 3, sorted(site - seen)


@pytest.mark.timeout(120)
def test_a_worker_waiting_to_join_takes_nothing_from_the_queue(
        collector: Collector, redis_url: str, fake_docs_factory: Any) -> None:
    import redis
    import scrapy

    from scraper.cluster import serializer
    from scraper.redis.keys import Keys

    docs = fake_docs_factory(sites=1, pages=3)
    site = f"{docs.url()}/site0/"
    collector.configure(docs_urls=[site])
    keys, client = Keys(), redis.Redis.from_url(redis_url)
    # Another worker holds the seed lock of an active round and has queued a page of it.
    page = scrapy.Request(f"{site}page1.html", meta={"site": site})
    entry = page.to_dict() | {"callback": "parse", "errback": "request_failed"}
    client.zadd(keys.requests("docs"), {serializer.dumps(entry): 0})
    client.hset(keys.round("docs"), mapping={"id": "1", "state": "active"})
    client.set(keys.seed_lock("docs"), "another worker", px=3000)
    result = collector.crawl("docs", None, env=collector.env(COLLECTOR_REDIS_URL=redis_url),
                             timeout=90)
    assert result.returncode == 0, result.stderr[-3000:]
    assert " ERROR: " not in collector.log("docs")
    assert f"{site}page1.html" in {item["url"] for item in collector.items("docs")}


@pytest.mark.timeout(120)
def test_the_cluster_collects_the_pages_only_sitemaps_list_once(
        collector: Collector, redis_url: str, fake_docs_factory: Any) -> None:
    """Sitemap requests are seeded with the start pages (outside the site cap's Redis sets),
    and the pages they list are shared through the one queue like links: each fetched once."""
    docs = fake_docs_factory(sites=2, pages=6, sitemap=True)
    base = docs.url()
    collector.configure(docs_urls=[f"{base}/site0/", f"{base}/site1/"],
                        spiders={"docs": {"sitemaps": True}})
    env = collector.env(COLLECTOR_REDIS_URL=redis_url)
    run = collector.runner("--workers", "2", "--spiders", "docs", "--once", env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    urls = collections.Counter(item["url"] for item in collector.items("docs"))
    assert max(urls.values()) == 1
    for k in (0, 1):
        assert f"{base}/site{k}/orphan.html" in urls
        assert f"{base}/site{k}/hidden/orphan.html" in urls
    fetched = page_counts(docs)
    assert all(count == 1 for path, count in fetched.items() if not path.endswith("flaky.html"))
