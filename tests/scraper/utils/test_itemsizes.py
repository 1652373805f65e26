"""The data dir's size from the sizes kept as segments close: what a walk says, without one."""

from __future__ import annotations

import fcntl
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from runner.catalog.build import build_catalog
from runner.core import datasize
from runner.status.render import collect_status
from scraper.config.collector import CollectorConfig
from scraper.utils import itemsizes
from scraper.utils.diskspace import data_size
from scraper.utils.layout import DataLayout
from tests.support.itemrounds import HOUR, fake_clock, search_item, store_round


def refuse_items_listing(monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> None:
    """Listing a spider's directory under items/ fails (os.walk lists through os.scandir)."""
    real = os.scandir
    items = str(data_dir / "items") + os.sep

    def scandir(path: object = ".") -> object:
        if str(path).startswith(items):
            raise AssertionError(f"items/ was listed: {path}")
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)


def test_sizes_kept_as_segments_close_equal_a_walk_without_listing_items(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = fake_clock(monkeypatch)
    layout = DataLayout(tmp_path)
    store_round(tmp_path, [search_item(0)])
    assert datasize.data_bytes(layout) == data_size(tmp_path)  # no record yet: counted once
    for hour in range(1, 6):  # each round past an hour closes a segment, plain or gzip
        clock[0] += 3600
        store_round(tmp_path, [search_item(n) for n in range(hour * 50)],
                    ITEMSTORE_COMPRESS="gzip" if hour % 2 else "")
    build_catalog(layout)  # the catalog and its -wal, counted by the walk of the rest
    walked = data_size(tmp_path)
    with monkeypatch.context() as refused:
        refuse_items_listing(refused, tmp_path)
        kept = datasize.data_bytes(layout)
        status = collect_status(layout, config=CollectorConfig(data_dir=tmp_path))
    assert kept == walked == status["totals"]["data_bytes"]
    assert len(list((tmp_path / "items" / "search").iterdir())) == 6


def test_what_removes_closed_files_makes_the_next_reader_count_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layout = DataLayout(tmp_path)
    for n in range(3):
        store_round(tmp_path, [search_item(n)], ITEMSTORE_SEGMENT_SECONDS=0,
                    ITEMSTORE_COMPRESS="gzip")
        monkeypatch.setattr(time, "time", lambda n=n: HOUR + n + 1)  # a name of its own
    assert datasize.data_bytes(layout) == data_size(tmp_path)
    old = HOUR - 2 * 86400
    for path in (tmp_path / "items" / "search").iterdir():
        os.utime(path, (old, old))
    config = replace(CollectorConfig(data_dir=tmp_path), items_keep_days=1)
    assert build_catalog(layout, config).removed == 3  # items_keep_days
    assert datasize.data_bytes(layout) == data_size(tmp_path)
    # A file removed by hand: the size sample's daily recount finds it.
    store_round(tmp_path, [search_item(9)], ITEMSTORE_SEGMENT_SECONDS=0)
    (by_hand,) = (tmp_path / "items" / "search").glob("*.jsonl")
    by_hand.unlink()
    assert datasize.data_bytes(layout) > data_size(tmp_path)
    later = HOUR + itemsizes.RECOUNT_EVERY + 60
    monkeypatch.setattr(time, "time", lambda: later)
    assert datasize.data_bytes(layout, recount_after=itemsizes.RECOUNT_EVERY) == \
        data_size(tmp_path)


def test_a_reader_on_a_full_disk_gets_the_count_without_keeping_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``status`` on a full disk: the recount cannot write its record (nor make its lock file),
    and the reader still gets the size; the next reader counts again."""
    clock = fake_clock(monkeypatch)
    layout = DataLayout(tmp_path)
    store_round(tmp_path, [search_item(0)])
    clock[0] += 3600  # the next round closes the first segment
    store_round(tmp_path, [search_item(n) for n in range(20)])
    itemsizes.forget(layout, "search")
    walked = sum(path.stat().st_blocks * 512 for path in layout.items_dir("search").iterdir()
                 if path.name.endswith(itemsizes.CLOSED_SUFFIXES))
    assert walked > 0

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(itemsizes, "write_json_atomic", full)
    assert itemsizes.closed_bytes(layout, "search") == walked
    monkeypatch.setattr(itemsizes, "open_private", full)
    assert itemsizes.closed_bytes(layout, "search") == walked
    assert not (layout.state_dir / "sizes" / "search.json").exists()


@pytest.mark.timeout(30)
def test_a_stopped_holder_of_the_sizes_lock_stops_no_reader_and_no_close(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process stopped while it holds a spider's sizes lock (a hung runner mid-sample, a
    ``status`` at ^Z): a reader still gets the count, without keeping it, a segment still closes
    and ``forget`` still forgets; the next reader after it is gone counts and keeps again."""
    clock = fake_clock(monkeypatch)
    monkeypatch.setattr(itemsizes, "LOCK_WAIT", 0.3)
    layout = DataLayout(tmp_path)
    record = layout.state_dir / "sizes" / "search.json"
    store_round(tmp_path, [search_item(0)])
    clock[0] += 3600  # the next round closes the first segment
    store_round(tmp_path, [search_item(n) for n in range(20)])
    assert datasize.data_bytes(layout) == data_size(tmp_path)
    assert record.exists()
    # flock locks belong to an open file: a second open of the lock file is another holder
    holder = os.open(layout.state_dir / "sizes" / "search.lock", os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        clock[0] += 3600
        store_round(tmp_path, [search_item(n) for n in range(40)])  # closes the second one
        assert not record.exists()  # the close could not add its file: the record went
        assert datasize.data_bytes(layout) == data_size(tmp_path)
        assert not record.exists()  # counted, not kept
        itemsizes.forget(layout, "search")
    finally:
        os.close(holder)
    assert datasize.data_bytes(layout) == data_size(tmp_path)
    assert record.exists()
