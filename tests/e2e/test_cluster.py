"""Many machines, one collector: three runners (separate data dirs) on one real Redis.

What the cluster must hold whatever its number of boxes — a box killed mid-round loses no page
(its leased requests go back), and a site gets the same politeness from three runners as from
one — judged by what the fake docs server saw.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import (
    PAGES,
    SITES,
    configure_docs,
    finish,
    machines,
    page_counts,
    runner_in_process,
    send_all,
    start_runners,
    tree,
)
from tests.support.collector import Collector, wait_for

pytestmark = pytest.mark.timeout(150)

LEASE = 3.0
LATENCY_MS = 500  # slow pages: 2 at a time to the site use every turn DELAY gives
PER_HOST, DELAY = 2, 0.2
POLITE = {"CONCURRENT_REQUESTS": 4, "CONCURRENT_REQUESTS_PER_DOMAIN": PER_HOST,
          "DOWNLOAD_DELAY": DELAY, "RANDOMIZE_DOWNLOAD_DELAY": False,
          "DISTRIBUTED_LEASE": LEASE}
SEND_JITTER = DELAY / 2
"""A turn is given on Redis's clock and the fake stamps the request's arrival: the two differ by
the time a request takes to be sent, milliseconds on loopback, more on a loaded machine."""


def politeness_seen(docs: Any, skip: tuple[float, float] = (0, 0)) -> tuple[int, float]:
    """The most requests the site had at once and the smallest gap between two arrivals (but
    those in ``skip``: a box stopped holding its turn sends when it is let go)."""
    stats = docs.stats()
    times = sorted(r["t"] for r in stats["requests"])
    gaps = [b - a for a, b in itertools.pairwise(times)
            if not (skip[0] <= a <= skip[1] or skip[0] <= b <= skip[1])]
    return stats["max_concurrency"], min(gaps)


def leased_paths(client: Any, runner_pid: int) -> set[str] | None:
    """Paths of the docs requests the runner's workers hold leased now (None: none yet)."""
    from urllib.parse import urlsplit

    workers = [key.decode().rsplit(":", 1)[1] for key in client.scan_iter("hubcollect:proc:*")
               if json.loads(client.get(key) or "{}").get("runner_pid") == runner_pid]
    paths = set()
    for worker in workers:
        for value in client.hvals(f"hubcollect:docs:leases:{worker}"):
            _, entry = value.split(b"\n", 1)  # origin, then the queue entry
            paths.add(urlsplit(json.loads(entry)["url"]).path)
    return paths or None


def all_items(box: Collector) -> list[dict[str, Any]]:
    """Closed item files and, for a killed box, the one it was writing."""
    rows = []
    for path in sorted((box.data_dir / "items" / "docs").glob("*.jsonl*")):
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):  # a line torn by the kill
                rows.append(json.loads(line))
    return rows


def test_a_killed_box_loses_no_page_and_politeness_holds(
        tmp_path: Path, redis_server: Any, redis_url: str, baseline: dict[str, Any],
        fake_docs_factory: Any) -> None:
    docs = fake_docs_factory(sites=SITES, pages=PAGES, latency_ms=LATENCY_MS)
    boxes = machines(tmp_path, 3)
    for box in boxes:
        configure_docs(box, docs, settings=POLITE)
    procs = start_runners(boxes, redis_url, "docs")
    victim, client = procs[0], redis_server.client()
    wait_for(lambda: sum(page_counts(docs).values()) >= 12, 60, "the crawl under way")
    frozen_at = time.time()
    while True:  # freeze the box when it holds requests, note them, then kill -9 all of it
        frozen = tree(victim)
        send_all(frozen, signal.SIGSTOP)
        held = leased_paths(client, victim.pid)
        if held:
            break
        send_all(frozen, signal.SIGCONT)
        time.sleep(0.1)
    send_all(frozen, signal.SIGKILL)
    victim.wait()
    killed_at = time.time()
    results = finish(procs[1:])
    assert [rc for rc, _ in results] == [0, 0], results

    # Every page of the round was fetched; a page twice only if the dead box held it.
    counts, expected = page_counts(docs), baseline["counts"]
    assert set(counts) == set(expected), set(expected) ^ set(counts)
    twice = {path for path in counts if counts[path] > expected[path]}
    assert twice <= held, (twice - held, held)
    assert all(counts[p] - expected[p] <= 1 for p in counts)
    # Every content once among the boxes left, all of it with the dead box's part.
    hashes = collections.Counter(i["content_hash"] for b in boxes[1:] for i in b.items("docs"))
    assert max(hashes.values()) == 1
    assert {i["content_hash"] for b in boxes for i in all_items(b)} == baseline["hashes"]
    stats = [json.loads(p.read_text())["stats"] for b in boxes[1:]
             for p in (b.data_dir / "state" / "workers").glob("docs-*.json")]
    assert sum(s.get("distributed/leases_reclaimed", 0) for s in stats) >= len(held)
    # The boxes stopped cleanly left the cluster's list; the killed one stays there, silent soon.
    boxes = [json.loads(v) for v in client.hvals("hubcollect:boxes")]
    assert [b["pid"] for b in boxes] == [victim.pid], boxes

    # Six workers on three boxes, one site: its politeness, as one worker's slot would keep it.
    concurrency, gap = politeness_seen(docs, skip=(frozen_at, killed_at + 0.5))
    assert concurrency <= PER_HOST and gap >= DELAY - SEND_JITTER, (concurrency, gap)


def test_one_runner_gives_a_site_the_same_politeness(
        tmp_path: Path, redis_url: str, fake_docs_factory: Any) -> None:
    # A third of the killed-box test's pages: the cap and the gap are met (or not) within the
    # first few turns, and a site of 10 pages keeps 2 workers asking for more than 2 turns.
    docs = fake_docs_factory(sites=SITES, pages=8, latency_ms=LATENCY_MS)
    (box,) = machines(tmp_path, 1)
    configure_docs(box, docs, settings=POLITE)
    results = finish(start_runners([box], redis_url, "docs"))
    assert [rc for rc, _ in results] == [0], results
    concurrency, gap = politeness_seen(docs)
    # Saturated (2 workers × 4 requests asked for 2 turns): the cap is reached, not passed.
    assert concurrency == PER_HOST and gap >= DELAY - SEND_JITTER, (concurrency, gap)


def test_status_and_watchdog_show_every_box_and_a_silent_one_once(
        tmp_path: Path, redis_server: Any, redis_url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    from runner.core.runnerstate import SlotRecord
    from runner.status.clusterview import box_summary
    from scraper.cluster.registry import RunnerBeacon

    client = redis_server.client()
    beacon = RunnerBeacon(redis_url)
    slots = [SlotRecord(spider="docs", slug="docs-0of2", pid=11, rounds=4, items_total=120,
                        round_started_at=time.time() - 30),
             SlotRecord(spider="docs", slug="docs-1of2", pid=12, rounds=4, items_total=80)]
    records = {data_dir: {"pid": pid, "started_at": time.time(), "data_dir": data_dir,
                          **box_summary(slots, None)}
               for pid, data_dir in ((101, "/srv/a"), (102, "/srv/b"))}

    def box_a_beats() -> None:
        """Box a's runner is alive: it beats every few seconds, so however long the commands
        below take, it never looks silent."""
        beacon.beat(records["/srv/a"], force=True)

    for record in records.values():
        beacon.beat(record, force=True)
    (box,) = machines(tmp_path, 1)
    box.configure(redis_url=redis_url)

    # The user's command, a real process once; the same code in this process after.
    result = box.runner("status", "--cluster", timeout=60)
    assert result.returncode == 0, result.stderr
    assert "2 boxes heartbeating" in result.stdout
    assert ("dataset: no box builds it yet (run 'python -m runner catalog' by hand on the one "
            "that should); 0 shipped segments (0.0 MB) waiting in Redis") in result.stdout
    assert result.stdout.count("     200  ok") == 2, result.stdout  # items, health per box

    # Box b's runner was killed: its heartbeat stops (here: its last one is 2 minutes old).
    name = f"{beacon.host}:/srv/b"
    record = json.loads(client.hget("hubcollect:boxes", name))
    client.hset("hubcollect:boxes", name, json.dumps({**record,
                                                      "updated_at": time.time() - 120}))
    box_a_beats()
    code, out = runner_in_process(box, capsys, "status", "--cluster")
    assert code == 1 and "1 SILENT" in out, out
    assert "SILENT for 2m" in out, out

    said = []
    for flag in ("--cluster", "--cluster-only"):
        box_a_beats()
        said.append(runner_in_process(box, capsys, "watchdog", flag)[1])
    line = f"cluster: box {name} stopped heartbeating 2m ago (last: 2 workers, 200 items)"
    assert line in said[0] and line not in said[1], said
    beacon.beat({**record, "pid": 102}, force=True)  # back
    box_a_beats()
    code, out = runner_in_process(box, capsys, "watchdog", "--cluster-only")
    assert code == 0 and out == f"cluster: box {name} heartbeating again\n", out
    box_a_beats()
    assert runner_in_process(box, capsys, "watchdog", "--cluster-only") == (0, "")


def test_content_hashes_are_kept_compact_and_reset_by_time(redis_url: str) -> None:
    from scraper.dedup.redishashes import RedisContentHashStore
    from scraper.redis.connection import RedisLink
    from scraper.redis.keys import Keys
    from scraper.redis.writebehind import WriteBehind

    link = RedisLink(redis_url)
    writes = WriteBehind(link, None)
    digest = "ab12" + "c" * 60
    store = RedisContentHashStore(link, Keys(), "docs", writes, owner="a", claim_ttl=60)
    assert store.claim(digest)
    store.confirm(digest, "2026-12-01T10:00:00Z")
    # 65,536 small hashes, 24 hex digits a field, Unix seconds: what keeps them listpacks.
    assert link.client.hgetall("hubcollect:docs:ch:ab12") == {b"c" * 24: b"1796119200"}
    assert link.client.object("encoding", "hubcollect:docs:ch:ab12") == b"listpack"
    assert digest in store and not store.claim(digest)
    later = RedisContentHashStore(link, Keys(), "docs", writes, owner="b", claim_ttl=60,
                                  ignore_before="2026-12-01T10:00:01Z")
    earlier = RedisContentHashStore(link, Keys(), "docs", writes, owner="c", claim_ttl=60,
                                    ignore_before="2026-12-01T10:00:00Z")
    assert later.claim(digest) and not earlier.claim(digest)  # written before a reset: new
