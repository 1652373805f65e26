"""What the distributed mode's Redis holds: no secret, nothing that runs (issue 19, items 1, 3).

* The GitHub token is on a request only while it is sent: a search crawl whose requests go
  back into the Redis queue — retried after a 5xx, replayed after a 403 rate-limit pause —
  leaves no token byte in any key, any value or the AOF (a real ``redis-server`` with
  ``appendonly yes``); and in the one-machine mode the spider never sees it either (callbacks,
  errbacks, items, logs, state).
* Queued requests are JSON: a pickle ``__reduce__`` payload pushed into ``…:requests`` is
  dropped unread with one ERROR line, and the crawl goes on.
"""

from __future__ import annotations

import collections
import os
import pickle
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import REDIS_SERVER, RedisServer
from tests.support.collector import REPO_ROOT, SCRAPY, Collector

# Per test, not per module: the one-machine test below runs without a redis-server too.
needs_redis = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not found on PATH "
                                 "(install it: apt-get install redis-server; .ci/run does)")

TOKEN = "ghp_R3disS3cretT0kenIssue19abcdefghij0123"
QUEUE = "hubcollect:search:requests"


@pytest.fixture
def aof_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis that writes every command to its append-only file before answering."""
    server = RedisServer(tmp_path / "redis", "--appendonly", "yes", "--appendfsync", "always",
                         "--aof-use-rdb-preamble", "no")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def redis_contents(client: Any) -> dict[bytes, list[bytes]]:
    """Every key, with its DUMP and what its type's read command answers (a DUMP may be
    LZF-compressed, so it alone could hide a string)."""
    contents = {}
    for key in client.scan_iter(count=1000):
        kind = client.type(key).decode()
        parts = [key, client.dump(key) or b""]
        if kind == "string":
            parts.append(client.get(key) or b"")
        elif kind == "hash":
            parts += [b for pair in client.hgetall(key).items() for b in pair]
        elif kind == "zset":
            parts += [member for member, _ in client.zrange(key, 0, -1, withscores=True)]
        elif kind == "list":
            parts += client.lrange(key, 0, -1)
        elif kind == "set":
            parts += list(client.smembers(key))
        elif kind == "stream":
            parts += [b for _, fields in client.xrange(key) for pair in fields.items()
                      for b in pair]
        else:
            raise AssertionError(f"{key!r}: a {kind} — read it here too")
        contents[key] = parts
    return contents


def files_under(directory: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def limited_until_first_403(github: Any, proc: subprocess.Popen[str], timeout: float = 90
                            ) -> subprocess.CompletedProcess[str]:
    """Run ``proc`` to its end while every search answers 403 "secondary rate limit" until
    the first such answer went out. The window is renewed 1 s at a time (GitHub's retry-after
    then says 1 s), so the pause is short however long the crawl takes to send its first."""
    while proc.poll() is None and not any(
            r["status"] == 403 for r in github.stats()["requests"]):
        github.control(secondary={"resource": "search", "seconds": 1, "status": 403})
        time.sleep(0.2)
    (result,) = Collector.wait_all([proc], timeout)
    return result


def search_collector(home: Path, github: Any, queries: list[str]) -> Collector:
    collector = Collector(home)
    collector.configure(github=github, spiders={"search": {
        "queries": queries, "settings": {"RETRY_BACKOFF_BASE": 0.1}}})
    return collector


@needs_redis
@pytest.mark.timeout(120)
def test_token_never_reaches_redis_nor_its_aof(tmp_path: Path, aof_redis: RedisServer,
                                               fake_github_factory: Any) -> None:
    github = fake_github_factory()
    collector = search_collector(tmp_path / "c", github, ["boom500", "few"])
    # The first searches answer 403 "secondary rate limit": the budget replays them.
    env = collector.env(GITHUB_TOKEN=TOKEN, COLLECTOR_REDIS_URL=aof_redis.url)
    result = limited_until_first_403(
        github, collector.start_crawl_args("search", None, "-s", "LOG_LEVEL=DEBUG", env=env))
    assert result.returncode == 0, result.stderr[-3000:]

    # The crawl took both ways back into the queue, with the token on every request sent.
    searches = [r for r in github.stats()["requests"] if r["path"].startswith("/search/")]
    statuses = collections.Counter(r["status"] for r in searches)
    assert statuses[403] >= 1 and statuses[500] == 3 and statuses[200] >= 1, statuses
    assert all(r["identity"] == f"Bearer {TOKEN}" for r in searches)
    stats = collector.stats("search")
    assert stats["github_budget/retried"] >= 1 and stats["retry/count"] == 2, stats
    assert stats["scheduler/enqueued/redis"] >= 2 + stats["github_budget/retried"] + 2
    assert collector.items("search")

    token = TOKEN.encode()
    contents = redis_contents(aof_redis.client())
    assert QUEUE.replace("requests", "round").encode() in contents  # the crawl's keys are there
    leaks = [key for key, parts in contents.items() if any(token in p for p in parts)]
    assert not leaks, leaks
    aof = files_under(aof_redis.directory / "appendonlydir")
    # The AOF holds every write of the crawl, queued requests included ...
    assert any(QUEUE.encode() in data and b"ZADD" in data for data in aof.values()), aof.keys()
    assert not [path for path, data in aof.items() if token in data]  # ... and no token
    written = files_under(collector.data_dir)
    assert not [path for path, data in written.items() if token in data]
    assert TOKEN not in result.stdout + result.stderr


HEADERS_SPIDER = '''
import os

import scrapy

from scraper.utils.sharding import Shard


class HeadersSpider(scrapy.Spider):
    """Shows the spider what request its answers belong to: the token must not be on it."""

    name = "headers"
    uses_github_token = True  # an API spider, as the search spider is
    shard = Shard(0, 1)
    custom_settings = {"RETRY_TIMES": 2, "RETRY_BACKOFF_BASE": 0.1, "ITEM_PIPELINES": {}}

    async def start(self):
        for query in ("boom500", "few"):
            yield scrapy.Request(f"{os.environ['FAKE_API']}/search/repositories?q={query}",
                                 errback=self.failed)

    def parse(self, response):
        headers = response.request.headers.to_unicode_dict()
        self.logger.info("request headers of %s: %s", response.url, dict(headers))
        yield {"url": response.url, "request_headers": dict(headers)}

    def failed(self, failure):
        headers = failure.request.headers.to_unicode_dict()
        self.logger.info("request headers of failed %s: %s", failure.request.url, dict(headers))
'''


@pytest.mark.timeout(90)
def test_token_never_reaches_the_spider_items_logs_or_state(
        tmp_path: Path, fake_github_factory: Any) -> None:
    """One machine, no Redis: a retried and a replayed request hand the spider (callbacks,
    errbacks, ``response.request``) no token, so nothing it writes can hold one."""
    github = fake_github_factory()
    collector = search_collector(tmp_path / "c", github, ["few"])
    (tmp_path / "headers_spider.py").write_text(HEADERS_SPIDER)
    feed = collector.data_dir / "items" / "headers.jsonl"
    # Through `scrapy crawl`, which resolves the config and the token into the settings.
    result = limited_until_first_403(github, subprocess.Popen(
        [*SCRAPY, "crawl", "headers", "-s", "SPIDER_MODULES=headers_spider",
         "-s", "LOG_LEVEL=DEBUG", "-O", f"{feed}:jsonl"],
        cwd=REPO_ROOT, env=collector.env(GITHUB_TOKEN=TOKEN, FAKE_API=github.url("api"),
                                         PYTHONPATH=f"{tmp_path}:{REPO_ROOT}"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), timeout=60)
    assert result.returncode == 0, result.stderr[-3000:]
    searches = [r for r in github.stats()["requests"] if r["path"].startswith("/search/")]
    statuses = collections.Counter(r["status"] for r in searches)
    assert statuses[403] >= 1 and statuses[500] == 3 and statuses[200] >= 1, statuses
    assert all(r["identity"] == f"Bearer {TOKEN}" for r in searches)
    log = result.stderr + (collector.data_dir / "logs" / "headers-0of1.log").read_text()
    assert "request headers of http" in log and "request headers of failed" in log
    assert feed.exists() and b"request_headers" in feed.read_bytes()
    assert TOKEN not in log + result.stdout
    written = files_under(collector.data_dir)
    assert not [path for path, data in written.items() if TOKEN.encode() in data]


class RunsCode:
    """What an attacker with write access to Redis would push: unpickling it runs a command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.system, (f"touch {shlex.quote(str(self.marker))}",)


@needs_redis
@pytest.mark.timeout(90)
def test_a_pickle_in_the_queue_is_refused_not_run(tmp_path: Path, fake_github_factory: Any
                                                  ) -> None:
    github = fake_github_factory()
    collector = search_collector(tmp_path / "c", github, ["few"])
    marker = tmp_path / "pwned"
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        # First in the queue (lowest score) when the worker starts its round.
        server.client().zadd(QUEUE, {pickle.dumps(RunsCode(marker)): -1000})
        result = collector.crawl("search", None,
                                 env=collector.env(COLLECTOR_REDIS_URL=server.url), timeout=60)
        left = server.client().zcard(QUEUE)
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr[-3000:]
    assert not marker.exists(), "the pickle payload ran"
    errors = [line for line in collector.log("search").splitlines() if " ERROR: " in line]
    assert len(errors) == 1, errors
    assert "refused an entry of the shared queue" in errors[0] and QUEUE in errors[0]
    assert collector.stats("search")["distributed/requests_refused"] == 1
    assert left == 0  # dropped, not left for the next worker to trip over
    assert collector.items("search")  # and the crawl went on


def test_queued_requests_round_trip_as_json_without_credentials() -> None:
    import json

    import scrapy
    from scrapy.utils.request import request_from_dict

    from scraper.cluster import serializer

    class Spider(scrapy.Spider):
        name = "t"

        def parse_page(self, response: Any) -> None: ...

        def failed(self, failure: Any) -> None: ...

    spider = Spider()
    request = scrapy.Request(
        "http://h/p?q=1", method="POST", body=b"\x00\xffbody", callback=spider.parse_page,
        errback=spider.failed, priority=-3, dont_filter=True, cb_kwargs={"page": 2},
        headers={"Accept": "x/y", "Authorization": "Bearer t0k", "Proxy-Authorization": "b"},
        meta={"query": "few", "redirect_urls": ["http://h/a"], "nested": {"n": None}})
    data = serializer.dumps(request.to_dict(spider=spider))
    assert b"t0k" not in data and b"Authorization" not in data
    back = request_from_dict(serializer.loads(data), spider=spider)
    assert (back.url, back.method, back.body, back.priority, back.dont_filter) == (
        request.url, "POST", b"\x00\xffbody", -3, True)
    assert back.callback == spider.parse_page and back.errback == spider.failed
    assert back.meta == request.meta and back.cb_kwargs == {"page": 2}
    assert back.headers[b"Accept"] == b"x/y" and b"Authorization" not in back.headers

    # A value JSON cannot hold is named, not silently changed.
    odd = request.replace(meta={"ticket": object()})
    with pytest.raises(serializer.Refused, match=r"meta\['ticket'\] is not a JSON value"):
        serializer.dumps(odd.to_dict(spider=spider))
    # Forged entries: another request class, a private callback, credentials.
    entry = json.loads(data)
    for field, value in (("_class", "os.system"), ("callback", "__init__"),
                         ("headers", {"Accept": "x"}), ("v", 0), ("dumps_kwargs", []),
                         ("unknown fields", 1)):
        with pytest.raises(serializer.Refused, match=field):
            serializer.loads(json.dumps({**entry, field: value}))
    forged = serializer.loads(json.dumps({**entry, "headers": {"Authorization": ["Bearer x"]}}))
    assert forged["headers"] == {}
    json_request = scrapy.http.JsonRequest("http://h/j", data={"a": [1]}, dumps_kwargs={})
    assert request_from_dict(serializer.loads(serializer.dumps(json_request.to_dict())),
                             spider=spider).body == json_request.body
    with pytest.raises(serializer.Refused, match="not JSON"):
        serializer.loads(pickle.dumps({"url": "http://h/"}))
