"""No segment stops the dataset, none takes its memory: the user's ``python -m runner catalog``
and ``status`` on one machine, and on the dataset box of a cluster (a real ``redis-server``,
segments shipped by the project's shipper and then damaged in Redis, as a failing box, a bug
or anyone with Redis's password could)."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import redis

from scraper.redis.keys import Keys
from tests.support.cluster import shipping_box
from tests.support.collector import Collector, runner_watched
from tests.support.damaged import DAMAGES, GOOD, search_lines, write_damaged_dir

pytestmark = pytest.mark.timeout(180)

MEMORY_CEILING_MB = 300
"""The most the catalog and the drain may take (peak RSS), whatever a segment holds."""
HUGE_LINE_MB = 400  # 1.1 GB before
HUGE_CHUNK_MB = 320  # one 300 MB chunk took the drain to 995 MB


def catalog_ids(collector: Collector) -> set[int]:
    conn = sqlite3.connect(collector.data_dir / "catalog.sqlite")
    try:
        return {row[0] for row in conn.execute("SELECT id FROM repos")}
    finally:
        conn.close()


def quarantined_in_status(collector: Collector) -> tuple[int, str]:
    shown = collector.runner("status", "--json")
    assert shown.returncode == 3, shown.stderr  # no runner: the catalog was run by hand
    text = collector.runner("status").stdout
    return json.loads(shown.stdout)["totals"]["segments_quarantined"], text


def test_unreadable_item_files_are_set_aside_and_status_counts_them(tmp_path: Path) -> None:
    collector = Collector(tmp_path / "c")
    collector.configure()
    damaged, good = write_damaged_dir(collector.data_dir / "items" / "search")

    built = collector.runner("catalog")

    assert built.returncode == 0, built.stderr
    assert "Traceback" not in built.stderr
    said = built.stderr.strip().splitlines()
    assert len(said) == len(DAMAGES), said
    for kind, path in damaged.items():
        (line,) = [line for line in said if f"{path}: {kind}" in line]
        assert "set aside as" in line and str(collector.data_dir / "quarantine") in line
    assert f"{len(DAMAGES)} unreadable files set aside in quarantine/" in built.stdout
    assert catalog_ids(collector) == good  # every file before and after each damaged one
    count, text = quarantined_in_status(collector)
    assert count == len(DAMAGES)
    assert f"QUARANTINED: {len(DAMAGES)} unreadable segments" in text

    again = collector.runner("catalog")
    assert again.returncode == 0 and again.stderr == "", again.stderr


def ship_and_damage(tmp_path: Path, redis_url: str, client: Any) -> tuple[set[int], list[str]]:
    """Box "b" ships segments, then one in two is damaged in Redis (its fields, or its gzip in
    each of DAMAGES' ways): the ids of the good ones' lines, and the damaged entries."""
    def chunk(damage: Any) -> dict[str, Any]:
        data = damage(search_lines(0))
        return {"c0": data, "size": len(data)}

    damages = [{"chunks": "abc"}, {"size": "a lot"}, *map(chunk, DAMAGES.values())]
    count = 2 * len(damages) + 1  # a good one before and after each
    b = shipping_box(tmp_path, "b", redis_url, spider="search")
    directory = b["layout"].items_dir("search")
    directory.mkdir(parents=True)
    names = [f"search-0of1-202611{k:02d}T000000Z.jsonl" for k in range(count)]
    for k, name in enumerate(names):
        (directory / name).write_bytes(search_lines(10 * k))
    assert b["shipper"].ship().shipped == count
    entries = [f"search/b--{name}.gz" for name in names]
    for entry, fields in zip(entries[1::2], damages, strict=True):
        client.hset(Keys().dataset_segment(entry), mapping=fields)
    good = {n for k in range(0, count, 2) for n in range(10 * k, 10 * k + 3)}
    return good, entries[1::2]


def test_the_dataset_box_sets_unreadable_shipments_aside_and_loads_the_rest(
        tmp_path: Path, redis_url: str, redis_server: Any) -> None:
    client = redis_server.client()
    good, damaged = ship_and_damage(tmp_path, redis_url, client)
    dataset = Collector(tmp_path / "a")
    dataset.configure(redis_url=redis_url)

    built = dataset.runner("catalog")

    assert built.returncode == 0, built.stderr
    assert "Traceback" not in built.stderr
    said = built.stderr.strip().splitlines()
    assert len(said) == len(damaged), said
    for entry in damaged:
        (line,) = [line for line in said if f": {entry}: " in line]
        assert "set aside as" in line, line
        assert (dataset.data_dir / "quarantine" / "shipped" / entry).is_file()
    assert f"{len(damaged)} unreadable set aside in quarantine/" in built.stdout
    assert catalog_ids(dataset) == good
    assert client.llen("hubcollect:dataset:queue") == 0
    count, text = quarantined_in_status(dataset)
    assert count == len(damaged) and f"QUARANTINED: {len(damaged)}" in text

    again = dataset.runner("catalog")
    assert again.returncode == 0 and again.stderr == "", again.stderr


def test_a_segment_of_one_huge_line_keeps_the_catalog_small(tmp_path: Path) -> None:
    collector = Collector(tmp_path / "c")
    collector.configure()
    directory = collector.data_dir / "items" / "search"
    directory.mkdir(parents=True)
    path = directory / "search-0of1-20261101T000000Z.jsonl.gz"
    with gzip.open(path, "wb", compresslevel=1) as handle:
        handle.write(search_lines(1))
        handle.write(b'{"spider": "search", "id": 4, "description": "')
        for _ in range(HUGE_LINE_MB):
            handle.write(b"x" * 1024 * 1024)
        handle.write(b'"}\n')
        # under CATALOG_MAX_LINE_BYTES, 5.6 million dicts (456 MB) once parsed
        handle.write(json.dumps({**GOOD, "id": 5, "topics": "TOPICS"}).replace(
            '"TOPICS"', "[" + "{}," * 5_000_000 + "{}]").encode() + b"\n")
        handle.write(search_lines(6))

    built, peak = runner_watched(collector, "catalog", timeout=150)

    print(f"\ncatalog of a {HUGE_LINE_MB} MB line and a dense one: peak RSS {peak:.0f} MB")
    assert built.returncode == 0, built.stderr
    assert peak < MEMORY_CEILING_MB, f"peak RSS {peak:.0f} MB"
    said = built.stderr.strip().splitlines()
    assert len(said) == 2, said
    assert f"{path}:4: (line): " in said[0] and "CATALOG_MAX_LINE_BYTES" in said[0]
    assert f"{path}:5: (line): " in said[1] and "CATALOG_MAX_LINE_VALUES" in said[1]
    assert catalog_ids(collector) == {1, 2, 3, 6, 7, 8}


def test_a_huge_shipped_chunk_keeps_the_drain_small(tmp_path: Path, redis_url: str) -> None:
    b = shipping_box(tmp_path, "b", redis_url, spider="search")
    directory = b["layout"].items_dir("search")
    directory.mkdir(parents=True)
    for k in range(2):
        (directory / f"search-0of1-2026110{k}T000000Z.jsonl").write_bytes(search_lines(10 * k))
    b["shipper"].ship()
    huge = "search/b--search-0of1-20261100T000000Z.jsonl.gz"
    size = HUGE_CHUNK_MB * 1024 * 1024
    writer = redis.Redis.from_url(redis_url, socket_timeout=120)  # 320 MB in one command
    writer.hset(Keys().dataset_segment(huge), mapping={"c0": b"x" * size, "size": size})
    writer.close()
    dataset = Collector(tmp_path / "a")
    dataset.configure(redis_url=redis_url)

    built, peak = runner_watched(dataset, "catalog", timeout=150)

    print(f"\ndrain of a {HUGE_CHUNK_MB} MB chunk: peak RSS {peak:.0f} MB")
    assert built.returncode == 0, built.stderr
    assert peak < MEMORY_CEILING_MB, f"peak RSS {peak:.0f} MB"
    (line,) = built.stderr.strip().splitlines()
    assert f": {huge}: its chunk c0 holds {size:,} bytes" in line
    kept = dataset.data_dir / "quarantine" / "shipped" / huge
    assert kept.stat().st_size == size  # kept whole, never deleted
    assert catalog_ids(dataset) == {10, 11, 12}
