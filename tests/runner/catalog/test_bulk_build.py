"""A bulk build (a first build, a catch-up) against builds file by file: the same tables, fewer
commits; and a catalog keyed the earlier way re-keyed on connect, every row kept."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from benchmarks.segmenthistory import History
from runner.catalog import build
from runner.catalog.schema import connect
from scraper.utils.layout import DataLayout
from tests.support.catalogtables import dump_by_content

HOURS = 24


def _commits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of files each transaction of a build commits, as it commits them."""
    sizes: list[int] = []
    load_files = build.load_files

    def counting(conn: object, files: list[tuple[str, Path]], warn: build.Warn
                 ) -> tuple[int, int]:
        result = load_files(conn, files, warn)
        sizes.append(len(files))
        return result

    monkeypatch.setattr(build, "load_files", counting)
    return sizes


def test_a_bulk_build_equals_builds_round_by_round(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    bulk, rounds = tmp_path / "bulk", tmp_path / "rounds"
    for root in (bulk, rounds):
        history = History(root / "items", search_per_hour=40)
        for _ in range(HOURS):
            history.hour()
    files = len(list((bulk / "items").rglob("*.jsonl")))
    monkeypatch.setattr(build, "DEFER_INDEX_FILES", 10)
    monkeypatch.setattr(build, "GROUP_BYTES", 64 * 1024)  # merged often within a commit
    commits = _commits(monkeypatch)
    merges: list[None] = []
    merge = build._merge
    monkeypatch.setattr(build, "_merge", lambda *args: merges.append(merge(*args)))
    result = build.build_catalog(DataLayout(bulk))
    assert result.files == files > 100
    # A few long transactions (a file larger than a transaction's share alone), each merging
    # every 64 KB of items.
    assert 1 < len(commits) < files / 5 and sum(commits) == files
    assert len(merges) > 2 * len(commits)

    # The same items, each hour's files built as the runner builds them after a round.
    commits.clear()
    items, held = rounds / "items", tmp_path / "held"
    shutil.move(items, held)
    hours = sorted({p.stem.rsplit("-", 1)[-1][:11] for p in held.rglob("*.jsonl")})
    assert len(hours) == HOURS
    for hour in hours:
        for path in held.rglob(f"*-{hour}*.jsonl"):
            (items / path.parent.name).mkdir(parents=True, exist_ok=True)
            path.rename(items / path.parent.name / path.name)
        build.build_catalog(DataLayout(rounds))
    assert len(commits) >= HOURS
    assert dump_by_content(bulk / "catalog.sqlite") == dump_by_content(rounds / "catalog.sqlite")
    conn = sqlite3.connect(bulk / "catalog.sqlite")
    try:
        indexes = {name for name, in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert set(build.DEFERRED_INDEXES) <= indexes  # made again at the end
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()


def test_a_catalog_keyed_the_earlier_way_is_rekeyed_keeping_every_row(tmp_path: Path) -> None:
    db = tmp_path / "catalog.sqlite"
    conn = connect(db)
    conn.execute("DROP TABLE repo_stars")
    conn.execute("CREATE TABLE repo_stars (id INTEGER NOT NULL, observed_at TEXT NOT NULL, "
                 "stargazers_count INTEGER, PRIMARY KEY (id, observed_at)) WITHOUT ROWID")
    rows = [(n % 7, f"2027-01-01T{n % 24:02d}:{n % 60:02d}:00Z", n) for n in range(500)]
    conn.executemany("INSERT OR IGNORE INTO repo_stars VALUES (?, ?, ?)", rows)
    kept = sorted(conn.execute("SELECT * FROM repo_stars"))
    conn.execute("PRAGMA user_version=2")
    conn.close()

    conn = connect(db)
    try:
        keys = sorted((pk, name) for _, name, _, _, _, pk
                      in conn.execute("PRAGMA table_info(repo_stars)") if pk)
        assert [name for _, name in keys] == ["observed_at", "id"]
        assert sorted(conn.execute("SELECT * FROM repo_stars")) == kept
        plan = " ".join(row[-1] for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM repo_stars WHERE id = 3"))
        assert "repo_stars_by_id" in plan
    finally:
        conn.close()
