"""Open segments no process writes are closed (by a catalog build once past their boundary, by
a runner's start and stop at once); one a live process holds is never touched."""

from __future__ import annotations

import fcntl
import gzip
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pipelines.idlesegments import close_idle_segments
from runner.catalog.build import build_catalog
from scraper.config.collector import CollectorConfig, SearchConfig
from scraper.utils.layout import DataLayout
from scraper.utils.sharding import Shard
from tests.support.itemrounds import fake_clock, search_item, store_round


@contextmanager
def shard_held(data_dir: Path, slug: str) -> Iterator[None]:
    """The worker lock of ``slug`` held, as a live ``scrapy crawl`` of it holds it."""
    path = data_dir / "state" / "locks" / f"{slug}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def names(data_dir: Path) -> list[str]:
    return sorted(p.name for p in (data_dir / "items" / "search").iterdir())


def test_a_build_closes_a_segment_past_its_hour_only_when_no_process_holds_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = fake_clock(monkeypatch)
    layout = DataLayout(tmp_path)
    config = CollectorConfig(data_dir=tmp_path)
    store_round(tmp_path, [search_item(1)], Shard(0, 4))  # a hand-run shard, never run again
    part = next((tmp_path / "items" / "search").glob("*.part"))
    with open(part, "ab") as handle:
        handle.write(b'{"spider": "sea')  # torn by a kill
    assert build_catalog(layout, config).closed_idle == 0  # within its hour: left open
    clock[0] += 3600
    with shard_held(tmp_path, "search-0of4"):
        held = build_catalog(layout, config)
    assert held.closed_idle == 0 and names(tmp_path)[0].endswith(".part")
    os.utime(part, (clock[0] - 60, clock[0] - 60))  # written a minute ago: its shard may run
    assert build_catalog(layout, config).closed_idle == 0
    os.utime(part, (clock[0] - 3600, clock[0] - 3600))  # an hour without a write
    free = build_catalog(layout, config)
    assert (free.closed_idle, free.files, free.lines) == (1, 1, 0)  # its line loaded before
    assert names(tmp_path) == ["search-0of4-20270115T080000Z.jsonl"]
    assert (tmp_path / "items/search/search-0of4-20270115T080000Z.jsonl").read_bytes() \
        .endswith(b"}\n")  # the torn tail cut as the shard's own start cuts it


def test_a_runner_start_or_stop_closes_every_idle_segment_but_a_held_one(tmp_path: Path) -> None:
    for shard in (Shard(0, 2), Shard(1, 2), Shard(0, 1)):
        store_round(tmp_path, [search_item(shard.index)], shard)
    config = {"search": SearchConfig(settings={"ITEMSTORE_COMPRESS": "gzip"}).settings}
    layout = DataLayout(tmp_path)
    with shard_held(tmp_path, "search-1of2"):
        closed = close_idle_segments(layout, config, keep=frozenset({"search-0of1"}),
                                     now=time.time())
    assert [path.name.split("-2")[0] for path in closed] == ["search-0of2"]
    assert gzip.decompress(closed[0].read_bytes()).count(b"\n") == 1
    left = names(tmp_path)
    assert sum(name.endswith(".part") for name in left) == 2, left
    assert len(close_idle_segments(layout, config, now=time.time())) == 2  # a stop: all free
    assert not [name for name in names(tmp_path) if name.endswith(".part")]
