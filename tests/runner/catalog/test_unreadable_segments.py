"""No item file stops the catalog: one that cannot be read is set aside under ``quarantine/``
with one line, the files before and after it load; a line too long to hold is skipped unread."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest

from runner.catalog.build import build_catalog
from runner.catalog.segmentread import UnreadableSegment, segment_lines
from scraper.utils.layout import DataLayout
from scraper.utils.quarantine import count_quarantined
from tests.support.damaged import DAMAGES, GOOD, search_lines, write_damaged_dir


def ids(layout: DataLayout) -> set[int]:
    conn = sqlite3.connect(layout.catalog_db)
    try:
        return {row[0] for row in conn.execute("SELECT id FROM repos")}
    finally:
        conn.close()


def test_each_unreadable_file_is_set_aside_and_every_other_file_loads(tmp_path: Path) -> None:
    layout = DataLayout(tmp_path / "data")
    damaged, good = write_damaged_dir(layout.items_dir("search"))
    before = {kind: path.read_bytes() for kind, path in damaged.items()}
    said: list[str] = []

    result = build_catalog(layout, warn=said.append)

    assert ids(layout) == good
    assert (result.files, result.quarantined, result.bad_lines) == (len(DAMAGES) + 1,
                                                                    len(DAMAGES), 0)
    assert len(said) == len(DAMAGES), said
    for kind, path in damaged.items():
        (line,) = [line for line in said if line.startswith(f"{path}: ")]
        assert kind in line and "set aside" in line, line
        aside = layout.quarantined_item_file(f"search/{path.name}")
        assert aside.read_bytes() == before[kind]  # kept byte for byte
        assert not path.exists()
    why = layout.quarantine_log.read_text().splitlines()
    assert sorted(line.split(" ")[1] for line in why) == sorted(
        f"items/search/{path.name}:" for path in damaged.values())
    assert count_quarantined(layout) == len(DAMAGES)

    again: list[str] = []
    assert build_catalog(layout, warn=again.append).files == 0 and again == []

    # Repaired by hand and moved back, a file loads at the next build.
    repaired = damaged["truncated"]
    repaired.write_bytes(gzip.compress(search_lines(900)))
    layout.quarantined_item_file(f"search/{repaired.name}").unlink()
    assert build_catalog(layout, warn=again.append).files == 1
    assert {900, 901, 902} <= ids(layout) and again == []


def test_what_good_files_of_a_group_say_is_said_once(tmp_path: Path) -> None:
    """A group is loaded again without its unreadable file: the bad lines of the others are
    named once, for the load that committed."""
    layout = DataLayout(tmp_path / "data")
    directory = layout.items_dir("search")
    directory.mkdir(parents=True)
    (directory / "search-0of1-20261101T000000Z.jsonl").write_bytes(
        search_lines(1) + b"{not json\n")
    (directory / "search-0of1-20261102T000000Z.jsonl.gz").write_bytes(b"not gzip at all\n")
    said: list[str] = []
    result = build_catalog(layout, warn=said.append)
    assert (result.files, result.quarantined, result.bad_lines) == (1, 1, 1)
    assert len([line for line in said if "not JSON" in line]) == 1, said
    assert ids(layout) == {1, 2, 3}


def test_a_line_longer_than_the_limit_is_read_past_unheld(tmp_path: Path) -> None:
    path = tmp_path / "search-0of1-20261101T000000Z.jsonl.gz"
    long_line = json.dumps({**GOOD, "id": 7, "description": "x" * 5000}).encode() + b"\n"
    path.write_bytes(gzip.compress(search_lines(1, 1) + long_line + search_lines(2, 1)))
    lines = list(segment_lines(path, max_line=1000))
    assert [(line.number, line.text is None) for line in lines] == [(1, False), (2, True),
                                                                    (3, False)]
    assert lines[1].size == len(long_line)
    assert json.loads(lines[2].text or "")["id"] == 2
    # exactly at the limit, the line is held
    assert list(segment_lines(path, max_line=len(long_line)))[1].text is not None


@pytest.mark.parametrize("kind", sorted(DAMAGES))
def test_each_damage_is_said_in_words(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "search-0of1-20261101T000000Z.jsonl.gz"
    path.write_bytes(DAMAGES[kind](search_lines(1, 200)))
    with pytest.raises(UnreadableSegment) as raised:
        list(segment_lines(path))
    assert raised.value.why.startswith(kind), raised.value.why
    assert raised.value.path == path


def test_lines_no_reader_can_hold_are_skipped_one_line_each(tmp_path: Path) -> None:
    """Nested past Python's recursion limit, a lone surrogate (which SQLite refused for the
    whole group), a JSON list: each a bad line, the good ones load."""
    layout = DataLayout(tmp_path / "data")
    directory = layout.items_dir("search")
    directory.mkdir(parents=True)
    path = directory / "search-0of1-20261101T000000Z.jsonl"
    surrogate = json.dumps({**GOOD, "id": 50, "description": "\ud800"})  # "\\ud800" in JSON
    path.write_bytes(search_lines(1, 2) + b"[" * 100_000 + b"\n" + surrogate.encode() + b"\n"
                     + b"[1, 2]\n" + search_lines(3, 1))
    said: list[str] = []
    result = build_catalog(layout, warn=said.append)
    assert (result.lines, result.bad_lines) == (6, 3)
    assert [line.split(": ")[0] for line in said] == [f"{path}:3", f"{path}:4", f"{path}:5"]
    assert "lone surrogate" in said[1]
    assert ids(layout) == {1, 2, 3}
