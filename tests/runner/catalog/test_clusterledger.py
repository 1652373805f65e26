"""The cluster's gap ledger merged into a box's files (runner/catalog/clusterledger.py), on a
real Redis: the events as boxes write them (scraper/cluster/ledger.py), the round's end as
the round's hash records it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scrapy import Request

from runner.catalog.clusterledger import NO_BOX, POSITION_FILE, merge_cluster_ledger
from scraper.cluster.ledger import add_event, plan_commands
from scraper.redis.keys import Keys
from scraper.utils.ledger import ledger_root, scheduled_fetches, stamp_ms

KEYS = Keys("t-ledger")
SPIDER = "docs"
SITES = ["http://a.test/", "http://b.test/", "http://c.test/"]


def run(client: Any, commands: list[list[str]]) -> None:
    for command in commands:
        client.execute_command(*command)


def seed(client: Any, round_id: int) -> str:
    stamp = stamp_ms()
    requests = [Request(site, meta={"ledger_key": site}) for site in SITES]
    run(client, plan_commands(KEYS, SPIDER, round_id, stamp, "site", requests, "box-a"))
    client.hset(KEYS.round(SPIDER), mapping={"id": str(round_id), "state": "active"})
    return stamp


def event(client: Any, stamp: str, **record: Any) -> None:
    run(client, add_event(KEYS, {"round": stamp, "spider": SPIDER, "shard": "cluster",
                                 **record}))


def outcomes(state_dir: Path) -> dict[str, tuple[str, str]]:
    return {f.key: (f.outcome, f.cause) for f in scheduled_fetches(state_dir)}


def lines(state_dir: Path) -> int:
    return sum(len(p.read_bytes().splitlines())
               for p in ledger_root(state_dir).glob("*/*.jsonl"))


def test_a_finished_round_names_who_went_silent_and_a_second_merge_adds_nothing(
        tmp_path: Path, redis_server: Any, redis_url: str) -> None:
    client = redis_server.client()
    stamp = seed(client, 1)
    event(client, stamp, t="sent", key=SITES[0], box="box-a", worker="1")
    event(client, stamp, t="fetch", key=SITES[0], outcome="data", cause="", box="box-a")
    event(client, stamp, t="sent", key=SITES[1], box="box-b", worker="2")
    client.xadd(KEYS.ledger, {"e": b"not json"})  # a hand-written entry: skipped
    merge_cluster_ledger(client, KEYS, tmp_path)
    # Running: the fetches not reported yet are left out, none is silent.
    assert outcomes(tmp_path) == {SITES[0]: ("data", "")}

    client.hset(KEYS.round(SPIDER), "state", "finished")
    merge_cluster_ledger(client, KEYS, tmp_path)
    assert outcomes(tmp_path) == {SITES[0]: ("data", ""),
                                  SITES[1]: ("silent", "lease lapsed (box-b)"),
                                  SITES[2]: ("silent", NO_BOX)}
    written = lines(tmp_path)
    merge_cluster_ledger(client, KEYS, tmp_path)
    assert lines(tmp_path) == written


def test_a_merge_killed_before_its_position_copies_again_and_reads_once(
        tmp_path: Path, redis_server: Any, redis_url: str) -> None:
    client = redis_server.client()
    stamp = seed(client, 4)
    for site in SITES:
        event(client, stamp, t="fetch", key=site, outcome="failed", cause="HTTP 500")
    merge_cluster_ledger(client, KEYS, tmp_path)
    first = outcomes(tmp_path)
    (ledger_root(tmp_path) / POSITION_FILE).unlink()  # as if killed before writing it
    merge_cluster_ledger(client, KEYS, tmp_path)
    assert outcomes(tmp_path) == first == dict.fromkeys(SITES, ("failed", "HTTP 500"))
    assert len(scheduled_fetches(tmp_path)) == len(SITES)


def test_the_stream_is_capped_and_expires(redis_server: Any, redis_url: str,
                                          monkeypatch: Any) -> None:
    from scraper.redis import defaults

    monkeypatch.setattr(defaults, "LEDGER_STREAM_MAXLEN", 10)
    client = redis_server.client()
    stamp = seed(client, 1)
    for n in range(500):
        event(client, stamp, t="sent", key=SITES[n % 3], box="b", worker=str(n))
    # Trimmed whole radix-tree nodes at a time (MAXLEN ~): at most one node over the cap.
    assert client.xlen(KEYS.ledger) <= 10 + 100
    assert 0 < client.ttl(KEYS.ledger) <= defaults.LEDGER_STREAM_TTL


def test_an_unreachable_redis_is_one_line_without_its_password(tmp_path: Path) -> None:
    from runner.catalog.clusterledger import merge_or_say
    from tests.support.cluster import free_port

    said: list[str] = []
    merge_or_say(f"redis://:s3cret-pw@127.0.0.1:{free_port()}/0", tmp_path, said.append)
    assert len(said) == 1 and "s3cret-pw" not in said[0], said
    assert said[0].startswith("gap ledger: Redis redis://") and "as last merged here" in said[0]
