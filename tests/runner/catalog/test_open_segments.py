"""The catalog loads open segments' whole lines, each once, across the segment's close."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from runner.catalog.build import build_catalog
from scraper.utils.layout import DataLayout
from tests.support.itemrounds import fake_clock, search_item, store_round


def rows(data_dir: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(data_dir / "catalog.sqlite")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def ids(data_dir: Path) -> list[int]:
    return [row[0] for row in rows(data_dir, "SELECT id FROM repo_stars ORDER BY id")]


def items_counted(data_dir: Path) -> int:
    return rows(data_dir, "SELECT coalesce(sum(items), 0) FROM items_per_hour")[0][0]


def torn(n: int) -> bytes:
    """A whole item's JSON without its newline: what a kill mid-write (or a write under way)
    leaves; read, it would load as item ``n``."""
    return json.dumps(search_item(n)).encode()


@pytest.mark.parametrize("compress", ["", "gzip"])
def test_open_lines_load_once_before_and_after_the_segment_closes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compress: str) -> None:
    clock = fake_clock(monkeypatch)
    layout = DataLayout(tmp_path)
    store_round(tmp_path, [search_item(1), search_item(2)], ITEMSTORE_COMPRESS=compress)
    (part,) = (tmp_path / "items" / "search").glob("*.part")
    whole = part.stat().st_size
    with open(part, "ab") as handle:
        handle.write(torn(99))  # a round writing its next line as the build reads
    first = build_catalog(layout)
    assert (first.files, first.lines, first.open_lines, first.bad_lines) == (0, 2, 2, 0)
    assert ids(tmp_path) == [1, 2]
    assert rows(tmp_path, "SELECT path, size, lines FROM loaded_files") == [
        (f"search/{part.name}", whole, 2)]
    assert build_catalog(layout).lines == 0  # the torn tail is still not a line
    clock[0] += 60
    store_round(tmp_path, [search_item(3)], ITEMSTORE_COMPRESS=compress)  # cuts it, appends
    assert build_catalog(layout).lines == 1
    clock[0] += 3600  # the next hour's round closes the segment and opens another
    store_round(tmp_path, [search_item(4)], ITEMSTORE_COMPRESS=compress)
    assert not part.exists()
    closing = build_catalog(layout)
    assert (closing.files, closing.lines, closing.open_lines) == (1, 1, 1)
    again = build_catalog(layout)
    assert (again.files, again.lines) == (0, 0)
    assert ids(tmp_path) == [1, 2, 3, 4] and items_counted(tmp_path) == 4
    closed_name = part.name.removesuffix(".part") + (".gz" if compress else "")
    loaded = dict(rows(tmp_path, "SELECT path, lines FROM loaded_files"))
    assert loaded.pop(f"search/{closed_name}") == 3  # its open record became the closed one's
    assert [path.endswith(".part") for path in loaded] == [True]
    # The same files in one clean build give the same tables.
    clean = tmp_path / "clean"
    shutil.copytree(tmp_path / "items", clean / "items")
    build_catalog(DataLayout(clean))
    for sql in ("SELECT * FROM repo_stars ORDER BY id", "SELECT * FROM items_per_hour"):
        assert rows(clean, sql) == rows(tmp_path, sql)


def test_a_kill_mid_line_is_never_read_and_nothing_loads_twice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = fake_clock(monkeypatch)
    layout = DataLayout(tmp_path)
    store_round(tmp_path, [search_item(1)])
    (part,) = (tmp_path / "items" / "search").glob("*.part")
    with open(part, "ab") as handle:
        handle.write(torn(99)[:30])  # the kill: half a line, never finished
    assert build_catalog(layout).lines == 1
    clock[0] += 60
    store_round(tmp_path, [search_item(2)])  # the shard's next start cuts the torn bytes
    result = build_catalog(layout)
    assert (result.lines, result.bad_lines) == (1, 0)
    assert ids(tmp_path) == [1, 2] and items_counted(tmp_path) == 2
    # A line written whole but without its newline yet is not read either.
    with open(part, "ab") as handle:
        handle.write(torn(99))
    assert build_catalog(layout).lines == 0 and ids(tmp_path) == [1, 2]


def test_an_open_segment_with_a_damaged_byte_is_left_where_it_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store_round(tmp_path, [search_item(1)])
    (part,) = (tmp_path / "items" / "search").glob("*.part")
    with open(part, "ab") as handle:
        handle.write(b'{"spider": "search", "id": 2, "x": "\xff"}\n')
    said: list[str] = []
    result = build_catalog(DataLayout(tmp_path), warn=said.append)
    assert part.exists() and (result.quarantined, result.lines) == (0, 0)
    assert said == [f"{part}: not UTF-8: byte 36 of line 2 is 0xff; not loaded while open "
                    "(set aside once closed)"]
