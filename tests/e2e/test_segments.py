"""Item segments: rounds append to one file per spider-shard, closed on a time or size boundary,
with every guarantee of a file per round (whole lines only, nothing lost, the tail recovered)."""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines import segments
from runner.catalog.build import build_catalog
from runner.core import growth
from runner.status.metrics import MetricsWriter
from scraper.config.collector import CollectorConfig
from scraper.utils.layout import DataLayout
from tests.support.itemrounds import search_item, store_round
from tests.support.paths import REPO_ROOT


def files(data_dir: Path) -> list[str]:
    return sorted(p.name for p in (data_dir / "items" / "search").iterdir())


def test_rounds_append_to_one_segment_until_its_boundary(tmp_path: Path, monkeypatch) -> None:
    clock = [1_800_000_000.0]  # 2027-01-15T08:00:00Z, on an hour boundary
    monkeypatch.setattr(time, "time", lambda: clock[0])
    for n in range(30):  # 30 rounds a minute apart: the first hour's half
        store_round(tmp_path, [search_item(n)])
        clock[0] += 60
    assert files(tmp_path) == ["search-0of1-20270115T080000Z.jsonl.part"]
    for n in range(30, 61):  # the first round at 09:00 closes it and opens the next
        store_round(tmp_path, [search_item(n)])
        clock[0] += 60
    names = files(tmp_path)
    assert names == ["search-0of1-20270115T080000Z.jsonl",
                     "search-0of1-20270115T090000Z.jsonl.part"], names
    closed = (tmp_path / "items" / "search" / names[0]).read_text().splitlines()
    assert [json.loads(line)["id"] for line in closed] == list(range(60))
    # The catalog loads the closed segment, and the open one's whole lines.
    result = build_catalog(DataLayout(tmp_path))
    assert (result.files, result.lines, result.open_lines) == (1, 61, 1)


def test_size_boundary_and_gzip_readable_by_catalog_and_zcat(tmp_path: Path) -> None:
    for n in range(4):
        store_round(tmp_path, [search_item(n * 10 + k) for k in range(10)],
                    ITEMSTORE_SEGMENT_BYTES=1500, ITEMSTORE_COMPRESS="gzip")
    names = files(tmp_path)
    assert all(name.endswith(".jsonl.gz") for name in names[:-1]) and len(names) >= 2, names
    zcat = subprocess.run(["sh", "-c", "zcat items/search/*.jsonl.gz"], cwd=tmp_path,
                          capture_output=True, text=True, check=True).stdout
    result = build_catalog(DataLayout(tmp_path))
    assert result.lines == len(zcat.splitlines()) > 0
    assert result.bad_lines == 0


def test_an_old_data_dir_loads_the_same_and_a_gzipped_loaded_file_is_not_loaded_twice(
        tmp_path: Path) -> None:
    store_round(tmp_path, [search_item(1), search_item(2)], ITEMSTORE_SEGMENT_SECONDS=0)
    layout = DataLayout(tmp_path)
    assert build_catalog(layout).files == 1
    (path,) = (tmp_path / "items" / "search").glob("*.jsonl")
    subprocess.run(["gzip", str(path)], check=True)  # the user compresses an old round file
    assert build_catalog(layout).files == 0


def test_a_kill_mid_line_loses_no_whole_line_and_the_next_round_appends(tmp_path: Path) -> None:
    store_round(tmp_path, [search_item(1)])
    (part,) = (tmp_path / "items" / "search").glob("*.part")
    with open(part, "ab") as handle:
        handle.write(b'{"spider": "search", "id": 2, "full_na')  # torn by a kill
    store_round(tmp_path, [search_item(3)])
    lines = part.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [1, 3]


def test_gzip_killed_after_rename_leaves_one_copy(tmp_path: Path) -> None:
    store_round(tmp_path, [search_item(1)])
    (part,) = (tmp_path / "items" / "search").glob("*.part")
    # A kill after the .gz was renamed into place but before the .part was removed.
    with gzip.open(segments.closed_name(part, "gzip"), "wb") as handle:
        handle.write(part.read_bytes())
    stale = part.with_name(part.name.replace(".jsonl.part", ".jsonl.gz.tmp"))
    stale.write_bytes(b"half a gzip")
    store_round(tmp_path, [search_item(2)])
    names = files(tmp_path)
    assert not stale.exists() and part.name not in names
    assert sum(name.endswith(".gz") for name in names) == 1


def refuse_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every way Python lists a directory fails: what runs meanwhile opens files by name only."""
    def listed(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a directory was listed: {args[:1]}")
    for owner, name in ((Path, "glob"), (Path, "rglob"), (Path, "iterdir"), (os, "scandir"),
                        (os, "listdir")):
        monkeypatch.setattr(owner, name, listed)


def pointer(data_dir: Path) -> Path:
    return data_dir / "state" / "segments" / "search-0of1.open"


def test_a_start_reads_the_pointer_file_and_never_lists_the_items_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1_800_000_000.0]  # 2027-01-15T08:00:00Z
    monkeypatch.setattr(time, "time", lambda: clock[0])
    store_round(tmp_path, [search_item(0)])
    assert pointer(tmp_path).read_text() == "search-0of1-20270115T080000Z.jsonl.part\n"
    for n in range(1, 121):  # two hours of rounds: two segments close, two open
        clock[0] += 60
        if n == 30:  # a kill mid-line: the next start cuts it, by the pointer's name
            with open(tmp_path / "items" / "search" / files(tmp_path)[-1], "ab") as handle:
                handle.write(b'{"spider": "search", "id": -1, "full')
        with monkeypatch.context() as patch:
            refuse_listing(patch)
            store_round(tmp_path, [search_item(n)])
    assert files(tmp_path) == ["search-0of1-20270115T080000Z.jsonl",
                               "search-0of1-20270115T090000Z.jsonl",
                               "search-0of1-20270115T100000Z.jsonl.part"]
    assert pointer(tmp_path).read_text() == "search-0of1-20270115T100000Z.jsonl.part\n"
    ids = [json.loads(line)["id"] for name in files(tmp_path)
           for line in (tmp_path / "items" / "search" / name).read_text().splitlines()]
    assert ids == list(range(121))


def test_without_a_pointer_the_start_lists_once_and_a_dangling_one_opens_a_new_segment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1_800_000_000.0]  # 2027-01-15T08:00:00Z
    monkeypatch.setattr(time, "time", lambda: clock[0])
    store_round(tmp_path, [search_item(1)])
    (part,) = (tmp_path / "items" / "search").glob("*.part")
    pointer(tmp_path).unlink()  # a data dir from before the pointer file
    store_round(tmp_path, [search_item(2)])  # found by listing, and named from now on
    assert pointer(tmp_path).read_text() == part.name + "\n"
    assert [json.loads(line)["id"] for line in part.read_text().splitlines()] == [1, 2]
    clock[0] += 3600
    store_round(tmp_path, [search_item(3)])  # past the hour: closes the 08:00 segment
    # A kill after the next start named its new segment, before it created it.
    pointer(tmp_path).write_text("search-0of1-20270115T090000Z.jsonl.part\n")
    with monkeypatch.context() as patch:
        refuse_listing(patch)
        store_round(tmp_path, [search_item(4)])
    assert files(tmp_path) == ["search-0of1-20270115T080000Z.jsonl",
                               "search-0of1-20270115T090000Z.jsonl.part"]
    assert [json.loads(line)["id"] for name in files(tmp_path)
            for line in (tmp_path / "items" / "search" / name).read_text().splitlines()] \
        == [1, 2, 3, 4]


RECOVER = """
import sys
from pathlib import Path
from pipelines.segments import cut_torn_tail
kept, torn = cut_torn_tail(Path(sys.argv[1]))
# VmHWM is this process's own peak; ru_maxrss is not: Linux carries the parent's high-water
# mark across the exec, so it would report pytest's peak (hundreds of MB after a long run).
status = open("/proc/self/status").read().splitlines()
peak_kb = next(int(row.split()[1]) for row in status if row.startswith("VmHWM:"))
print(kept, torn, peak_kb // 1024)
"""


@pytest.mark.timeout(120)
def test_recovering_a_large_part_reads_only_its_tail(tmp_path: Path) -> None:
    part = tmp_path / "search-0of1-20200101T000000Z.jsonl.part"
    line = (json.dumps(search_item(7)) + "\n").encode()
    block = line * (8 * 1024 * 1024 // len(line))
    with open(part, "wb") as handle:
        for _ in range(40):  # 320 MB of whole lines, then a torn one
            handle.write(block)
        handle.write(line[:-20])
    whole = part.stat().st_size - (len(line) - 20)
    result = subprocess.run([sys.executable, "-c", RECOVER, str(part)], capture_output=True,
                            text=True, check=True, cwd=REPO_ROOT)
    kept, torn, peak_mb = map(int, result.stdout.split())
    assert (kept, torn) == (whole, len(line) - 20)
    assert part.stat().st_size == whole
    assert peak_mb < 100, f"recovery peaked at {peak_mb} MB"


def open_under(root: Path) -> int:
    """Descriptors of this process open on files under ``root``: the test process's others
    (its reactor thread, servers and clients other tests left to the garbage collector) come
    and go on their own."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        count += target.startswith(f"{root}/")
    return count


def test_300_rounds_keep_files_memory_and_fds_flat(tmp_path: Path, monkeypatch) -> None:
    clock = [1_800_000_000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    samples = []
    # The runner parent's own per-round work: its status write's metrics and size sample.
    metrics = MetricsWriter(DataLayout(tmp_path), CollectorConfig(data_dir=tmp_path))
    for n in range(300):  # five hours of rounds a minute apart
        store_round(tmp_path, [search_item(n)])
        metrics.write()
        clock[0] += 60
        if n % 50 == 49:
            samples.append((len(files(tmp_path)), open_under(tmp_path),
                            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
    counts = [s[0] for s in samples]
    assert counts[-1] <= 6, counts  # one segment an hour, not one per round
    assert len({s[1] for s in samples}) == 1, samples  # no descriptor left open
    assert samples[-1][2] - samples[0][2] < 10 * 1024, samples  # KB: RSS flat
    assert (tmp_path / "state" / "metrics" / "hubcollect.prom").read_text().endswith("# EOF\n")
    assert len(growth.read_samples(DataLayout(tmp_path))) == 30  # one per 10 minutes


def test_items_keep_days_removes_only_old_compressed_segments_once_loaded(
        tmp_path: Path, monkeypatch) -> None:
    from dataclasses import replace

    from scraper.config.collector import CollectorConfig

    store_round(tmp_path, [search_item(1)], ITEMSTORE_SEGMENT_SECONDS=0, ITEMSTORE_COMPRESS="gzip")
    store_round(tmp_path, [search_item(2)], ITEMSTORE_SEGMENT_SECONDS=0)
    layout = DataLayout(tmp_path)
    config = replace(CollectorConfig(data_dir=tmp_path), items_keep_days=1)
    old = time.time() - 2 * 86400
    for path in (tmp_path / "items" / "search").iterdir():
        os.utime(path, (old, old))
    first = build_catalog(layout, config)  # loads both, then removes the old compressed one
    assert (first.files, first.removed) == (2, 1)
    assert [name.endswith(".jsonl") for name in files(tmp_path)] == [True]
    later = time.time() + 5  # a later segment: a name of its own, as every new segment has
    monkeypatch.setattr(time, "time", lambda: later)
    store_round(tmp_path, [search_item(3)], ITEMSTORE_SEGMENT_SECONDS=0, ITEMSTORE_COMPRESS="gzip")
    for path in (tmp_path / "items" / "search").glob("*.gz"):
        os.utime(path, (old, old))
    # Loaded first, then removed: its items are in the catalog.
    third = build_catalog(layout, config)
    assert (third.files, third.removed) == (1, 1)
    import sqlite3

    conn = sqlite3.connect(tmp_path / "catalog.sqlite")
    assert conn.execute("SELECT count(*) FROM repos").fetchone()[0] == 3
    conn.close()
