"""``python -m runner export --format parquet`` writes real types: moments as
``timestamp[us, UTC]``, ``topics`` as ``list<string>``; a cell that is neither is one line."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

import pytest

from runner.catalog.schema import connect
from tests.support.collector import Collector, in_child

READ_TYPES = """
import json, sys, pyarrow.parquet as pq
table = pq.read_table(sys.argv[1])
print(json.dumps({"types": {f.name: str(f.type) for f in table.schema},
                  "rows": [{k: str(v) for k, v in row.items()} for row in table.to_pylist()]}))
"""

REPO = (1296269, "octocat/Hello-World", "My first repository", "Python", 80, 9,
        '["octocat", "atom"]', "MIT", "2011-01-26T19:01:12Z", "2011-01-26T19:06:43Z", 0,
        "2026-12-01T10:07:26.123Z", "2026-12-01T11:07:26.456Z")


def catalog_with(collector: Collector, *rows: tuple[object, ...]) -> None:
    collector.configure()
    conn = connect(collector.data_dir / "catalog.sqlite")
    conn.executemany(f"INSERT INTO repos VALUES ({', '.join('?' * len(REPO))})", rows)
    conn.close()


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="pyarrow extra")
def test_parquet_has_timestamps_and_lists(collector: Collector, tmp_path: Path) -> None:
    catalog_with(collector, REPO, (2, None, None, None, None, None, None, None, None, None,
                                   None, "2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z"))
    result = collector.runner("export", "--format", "parquet", "--table", "repos", "--out",
                              str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    read = in_child(READ_TYPES, tmp_path / "out" / "repos.parquet")
    types = read["types"]
    for name in ("created_at", "pushed_at", "first_seen", "last_seen"):
        assert types[name] == "timestamp[us, tz=UTC]", (name, types[name])
    assert types["topics"] == "list<element: string>"
    assert types["full_name"] == "string" and types["stargazers_count"] == "int64"
    empty, first = read["rows"]  # in key (id) order
    assert first["topics"] == "['octocat', 'atom']"
    assert first["created_at"] == "2011-01-26 19:01:12+00:00"
    assert first["first_seen"] == "2026-12-01 10:07:26.123000+00:00"
    assert empty["topics"] == "None" and empty["created_at"] == "None"


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="pyarrow extra")
def test_parquet_refuses_a_cell_that_is_not_its_type(collector: Collector,
                                                    tmp_path: Path) -> None:
    catalog_with(collector, (*REPO[:8], "last tuesday", *REPO[9:]))
    out = tmp_path / "out"
    result = collector.runner("export", "--format", "parquet", "--table", "repos", "--out",
                              str(out))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "python -m runner export: repos.created_at: 'last tuesday' is not an ISO-8601 time "
        "(Invalid isoformat string: 'last tuesday')"]
    assert list(out.iterdir()) == []  # no half-written file left
    assert sqlite3.connect(collector.data_dir / "catalog.sqlite").execute(
        "SELECT count(*) FROM repos").fetchone() == (1,)
