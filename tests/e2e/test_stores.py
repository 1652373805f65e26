"""State and files through real crawls: per spider-shard locks, item files and logs; per spider
dedup stores, shared by its shards. What needs processes (two at once, a lock) runs
``scrapy crawl``; a store's or a file's rule alone, a round in this process
(tests/support/incrawler.py)."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path

import pytest

from tests.support.collector import Collector
from tests.support.incrawler import crawl_round

ITEM_FILE = re.compile(r"^docs-(\d+)of(\d+)-\d{8}T\d{6}Z(-\d+)?\.jsonl$")


def integrity(path: Path) -> tuple[str, int, dict[str, str]]:
    """(integrity_check result, entries, meta) of a store file, read-only."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        check = conn.execute("PRAGMA integrity_check").fetchone()[0]
        entries = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    finally:
        conn.close()
    return check, entries, meta


def docs_sites(docs, count: int) -> list[str]:
    return [f"{docs.url()}/site{k}/" for k in range(count)]


@pytest.mark.timeout(120)
def test_two_shards_at_once_share_sound_stores_and_have_their_own_logs(collector: Collector,
                                                                 fake_docs_factory) -> None:
    docs = fake_docs_factory(sites=4, pages=10, latency_ms=10)
    collector.configure(docs_urls=docs_sites(docs, 4))
    procs = [collector.start_crawl("docs", "1/4"), collector.start_crawl("docs", "2/4")]
    for result in Collector.wait_all(procs):
        assert result.returncode == 0, result.stderr[-3000:]
    states = [collector.worker_state("docs", s) for s in ("1/4", "2/4")]
    assert max(s["started_at"] for s in states) < min(s["updated_at"] for s in states)

    state = collector.data_dir / "state"
    # One store per spider, written by both shards at once: sound, and holding both shards' work.
    check, entries, meta = integrity(state / "deltafetch" / "docs.sqlite")
    assert (check, meta["kind"]) == ("ok", "deltafetch")
    assert entries >= 22  # every page that gave an item (mirrors too), both sites
    check, entries, meta = integrity(state / "contenthash" / "docs.sqlite")
    assert (check, meta["kind"]) == ("ok", "contenthash")
    assert entries == 22  # per site: 10 pages (page0 = the root) + flaky
    for slug, site in (("1of4", "site1"), ("2of4", "site2")):
        # Each shard's log is its own.
        log = collector.log("docs", f"{slug[0]}/4")
        assert "Spider closed (finished)" in log
        other = "2of4" if slug == "1of4" else "1of4"
        assert f"docs-{slug}-" in log and f"docs-{other}-" not in log
        items = [i for i in collector.items("docs") if i["shard"] == f"{slug[0]}/4"]
        assert len(items) == 11 and all(f"/{site}/" in i["url"] for i in items)
    # No upstream docs.db, no per-shard store.
    assert not list(collector.data_dir.rglob("*.db"))
    for kind in ("deltafetch", "contenthash"):
        assert {p.name for p in (state / kind).iterdir()} <= {
            "docs.sqlite", "docs.sqlite-wal", "docs.sqlite-shm"}
    assert sorted(p.name for p in (collector.data_dir / "logs").glob("*.log")) == [
        "docs-1of4.log", "docs-2of4.log"]
    for path in collector.item_files("docs"):
        assert ITEM_FILE.match(path.name), path.name


@pytest.mark.timeout(120)
def test_unreadable_stores_are_moved_aside_not_deleted(collector: Collector,
                                                       fake_docs_factory, caplog) -> None:
    docs = fake_docs_factory(sites=1, pages=8)
    collector.configure(docs_urls=docs_sites(docs, 1))
    crawl_round("docs", collector.config_path, shard="0/2")
    first_items = len(collector.items("docs"))
    assert first_items == 9

    state = collector.data_dir / "state"
    delta = state / "deltafetch" / "docs.sqlite"
    content = state / "contenthash" / "docs.sqlite"
    truncated = delta.read_bytes()[: delta.stat().st_size // 2]  # a torn copy of a real store
    garbage = b"this is not a database\n" * 200
    delta.write_bytes(truncated)
    content.write_bytes(garbage)

    caplog.clear()
    stats = crawl_round("docs", collector.config_path, shard="0/2")
    (delta_aside,) = delta.parent.glob("docs.sqlite.unreadable-*")
    (content_aside,) = content.parent.glob("docs.sqlite.unreadable-*")
    assert delta_aside.read_bytes() == truncated
    assert content_aside.read_bytes() == garbage
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert any(delta_aside.name in line for line in errors), errors
    assert any(content_aside.name in line for line in errors), errors
    # The crawl went on with new, sound stores: everything was collected again.
    assert stats["item_scraped_count"] == first_items
    assert not stats.get("deltafetch/skipped")
    for path in (delta, content):
        check, entries, _ = integrity(path)
        assert check == "ok" and entries >= first_items
    assert len(collector.items("docs")) == 2 * first_items


@pytest.mark.timeout(90)
def test_same_shard_twice_at_once_the_second_exits_3(collector: Collector,
                                                     fake_docs_factory) -> None:
    docs = fake_docs_factory(sites=1, pages=15, latency_ms=250)
    collector.configure(docs_urls=docs_sites(docs, 1))
    first = collector.start_crawl("docs", "0/3")
    lock = collector.data_dir / "state" / "locks" / "docs-0of3.lock"
    deadline = time.monotonic() + 30
    while not (lock.exists() and lock.read_text().strip() == str(first.pid)):
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline, "the first crawl never took its lock"
        time.sleep(0.05)
    try:
        second = collector.crawl("docs", "0/3", timeout=60)
        still_running = first.poll() is None
    finally:
        _, err = first.communicate(timeout=90)
    assert still_running, "the first crawl ended before the second started: nothing was tested"
    assert second.returncode == 3, (second.returncode, second.stderr)
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1, second.stderr
    assert f"pid {first.pid}" in lines[0]
    assert "docs 0/3" in lines[0]
    assert "Traceback" not in second.stderr
    assert first.returncode == 0, err[-3000:]
    # The second left no trace: one round, one item file for shard 0/3.
    assert len([p for p in collector.item_files("docs") if "-0of3-" in p.name]) == 1
    # Nor did it write into the running worker's log (not even Scrapy's start-up banner).
    log = collector.log("docs", "0/3")
    assert log.count("Spider opened") == 1
    assert log.count("Scrapy 2.19") == 1, "the refused process wrote into the worker's log"


@pytest.mark.timeout(90)
def test_part_file_left_by_a_kill_is_recovered_at_next_start(collector: Collector,
                                                             fake_docs_factory, caplog) -> None:
    docs = fake_docs_factory(sites=1, pages=4)
    collector.configure(docs_urls=docs_sites(docs, 1))
    items_dir = collector.data_dir / "items" / "docs"
    items_dir.mkdir(parents=True)
    whole = [json.dumps({"url": f"http://x.example/{n}", "title": "naïve", "n": n},
                        ensure_ascii=False) + "\n" for n in (1, 2)]
    torn = '{"url": "http://x.example/3", "tit'
    part = items_dir / "docs-0of1-20200101T000000Z.jsonl.part"
    part.write_bytes("".join(whole).encode() + torn.encode())
    # Another shard's leftover is that shard's business, and a .part with no whole line.
    other = items_dir / "docs-1of2-20200101T000000Z.jsonl.part"
    other.write_bytes(b'{"url": "torn')
    empty = items_dir / "docs-0of1-20200102T000000Z.jsonl.part"
    empty.write_bytes(b'{"url": "torn only')

    crawl_round("docs", collector.config_path)
    recovered = items_dir / "docs-0of1-20200101T000000Z.jsonl"
    assert recovered.read_bytes() == "".join(whole).encode()
    assert not part.exists() and not empty.exists()
    assert not (items_dir / "docs-0of1-20200102T000000Z.jsonl").exists()
    assert other.read_bytes() == b'{"url": "torn'
    # Every visible file is whole lines of JSON.
    visible = collector.item_files("docs")
    assert recovered in visible and len(visible) == 2
    for path in visible:
        data = path.read_bytes()
        assert data.endswith(b"\n")
        for line in data.decode("utf-8").splitlines():
            json.loads(line)
    assert (f"recovered {part.name}: kept its {len(''.join(whole).encode())} bytes of whole "
            f"lines, cut {len(torn)} torn bytes") in caplog.text
    assert not list(items_dir.glob("docs-0of1-*.part"))
