"""Stores from elsewhere: old, torn, garbage, foreign or locked — never deleted, never reset.

Each case puts a bad file where a spider's deltafetch or content-hash store lives, then
runs the real ``scrapy crawl docs``: the file is moved aside (``*.unreadable-*``, with exactly
the original bytes) with one ERROR line naming it, or opened safely; the crawl completes.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.collector import Collector
from tests.support.fakes.launcher import FakeServer, start_fake_docs
from tests.support.incrawler import crawl_log, crawl_round
from tests.support.stores import rows

SHARD = "0/1"
PAGES = 12


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    server = start_fake_docs(tmp_path_factory.mktemp("fake-docs"), sites=1, pages=PAGES)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, docs_server: FakeServer) -> Path:
    """A data dir after one complete crawl: real stores, as this version writes them."""
    collector = Collector(tmp_path_factory.mktemp("seed") / "c")
    collector.configure(docs_urls=[f"{docs_server.url()}/site0/"])
    crawl_round("docs", collector.config_path, shard=SHARD)
    assert len(collector.items("docs")) == PAGES + 1  # pages, and flaky.html
    return collector.data_dir


def docs_round(collector: Collector) -> tuple[dict[str, Any], str]:
    """A round of the docs spider in this process, which must finish: stats and log."""
    with crawl_log() as lines:
        stats = crawl_round("docs", collector.config_path, shard=SHARD)
    return stats, "\n".join(lines)


def stores(data_dir: Path) -> dict[str, Path]:
    state = data_dir / "state"
    return {"deltafetch": state / "deltafetch" / "docs.sqlite",
            "contenthash": state / "contenthash" / "docs.sqlite"}


def home_from(seed: Path, tmp_path: Path, server: FakeServer) -> Collector:
    collector = Collector(tmp_path / "c")
    shutil.copytree(seed, collector.data_dir)
    for path in stores(collector.data_dir).values():
        sql(path, "SELECT 1 FROM sqlite_master")  # the last close checkpoints: no -wal left
    for leftover in (collector.data_dir / "items").rglob("*.jsonl"):
        leftover.unlink()  # only this test's round counts below
    collector.configure(docs_urls=[f"{server.url()}/site0/"])
    return collector


def sql(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def meta(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())
    finally:
        conn.close()


# Each damage: (store, how to damage it given the seeded file) → the bytes now in its place.
def older_version(path: Path) -> None:
    sql(path, "UPDATE meta SET value = '0' WHERE key = 'version'")


def newer_version(path: Path) -> None:
    sql(path, "UPDATE meta SET value = '2' WHERE key = 'version'")


def truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:1000])


def garbage(path: Path) -> None:
    path.write_bytes(bytes((i * 131 + 7) % 256 for i in range(8192)))


def not_sqlite_text(path: Path) -> None:
    path.write_text("deltafetch = {'seen': []}\n" * 50)


def foreign_tables(path: Path) -> None:
    path.unlink()
    sql(path, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
        "INSERT INTO users (name) VALUES ('alice'), ('bob')")


def foreign_meta(path: Path) -> None:
    """Someone else's database that happens to have a table called meta."""
    path.unlink()
    sql(path, "CREATE TABLE meta (version INTEGER, created TEXT)",
        "INSERT INTO meta VALUES (3, '2020-01-01')")


def other_kind(path: Path) -> None:
    """A deltafetch store (valid, of this version) in the content-hash store's place."""
    data_dir = path.parents[2]  # {data_dir}/state/contenthash/docs.sqlite
    shutil.copyfile(stores(data_dir)["deltafetch"], path)


DAMAGES: list[tuple[str, Callable[[Path], None], str]] = [
    ("deltafetch", older_version, "version 0, expected 1"),
    ("contenthash", older_version, "version 0, expected 1"),
    ("deltafetch", newer_version, "version 2, expected 1"),
    ("deltafetch", truncated, ""),
    ("contenthash", truncated, ""),
    ("deltafetch", garbage, "not a database"),
    ("contenthash", not_sqlite_text, "not a database"),
    ("deltafetch", foreign_tables, "unknown tables ['users']"),
    ("contenthash", foreign_tables, "unknown tables ['users']"),
    ("deltafetch", foreign_meta, "a 'meta' table of another schema"),
    ("contenthash", other_kind, "not a 'contenthash' store"),
]


@pytest.mark.timeout(90)
@pytest.mark.parametrize("which, damage, reason", DAMAGES,
                         ids=[f"{w}-{d.__name__}" for w, d, _ in DAMAGES])
def test_unusable_store_is_moved_aside_with_one_error(
        tmp_path: Path, seeded: Path, docs_server: FakeServer, which: str,
        damage: Callable[[Path], None], reason: str) -> None:
    collector = home_from(seeded, tmp_path, docs_server)
    path = stores(collector.data_dir)[which]
    other = stores(collector.data_dir)["contenthash" if which == "deltafetch" else "deltafetch"]
    other_rows = rows(other)
    damage(path)
    original = path.read_bytes()
    assert not Path(f"{path}-wal").exists()  # the whole store is in the file we compare

    stats, log = docs_round(collector)
    assert "Traceback" not in log

    # Moved aside, byte for byte; never deleted.
    asides = sorted(path.parent.glob(f"{path.name}.unreadable-*"))
    assert [p.name for p in asides if not p.name.endswith(("-wal", "-shm"))] != [], \
        list(path.parent.iterdir())
    (aside,) = [p for p in asides if not p.name.endswith(("-wal", "-shm"))]
    assert aside.read_bytes() == original
    # One ERROR line, naming the store, why, and where it went.
    errors = [line for line in log.splitlines() if "] ERROR: " in line]
    assert len(errors) == 1, errors
    assert str(path) in errors[0] and aside.name in errors[0] and reason in errors[0], errors
    # A new, sound store of the right kind in its place; the crawl completed.
    assert meta(path) == {"kind": which, "version": "1"}
    assert rows(path) > 0
    # The other store was not touched: it was opened and kept its rows.
    assert rows(other) >= other_rows
    assert not list(other.parent.glob(f"{other.name}.unreadable-*"))
    if which == "deltafetch":  # the shard forgot which pages it had: it fetched them all again
        assert rows(path) == rows(stores(seeded)["deltafetch"])
        assert not collector.items("docs")  # … and knew their content: nothing written twice
        assert stats.get("contenthash/dropped", 0) >= PAGES
    else:  # pages skipped by URL; only the start page (re-read every round) is new to it
        assert stats.get("deltafetch/skipped", 0) > 0
        assert len(collector.items("docs")) == 1


@pytest.mark.timeout(90)
def test_empty_store_file_is_opened_safely(tmp_path: Path, seeded: Path,
                                           docs_server: FakeServer) -> None:
    """A zero-byte file is an empty SQLite database: it becomes the store, nothing moved."""
    collector = home_from(seeded, tmp_path, docs_server)
    path = stores(collector.data_dir)["contenthash"]
    path.write_bytes(b"")
    _, log = docs_round(collector)
    assert not list(path.parent.glob("*.unreadable-*"))
    assert meta(path) == {"kind": "contenthash", "version": "1"}
    assert rows(path) >= 1
    assert "] ERROR: " not in log


HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("PRAGMA locking_mode=EXCLUSIVE")  # not even readers get in
conn.execute("BEGIN EXCLUSIVE")
conn.execute("INSERT OR REPLACE INTO entries VALUES (x'00ff', 'written by another process')")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
print(repr(time.time()), flush=True)
conn.close()
"""


@pytest.mark.timeout(90)
@pytest.mark.parametrize("which", ["deltafetch", "contenthash"])
def test_store_locked_by_another_process_is_waited_for(
        tmp_path: Path, seeded: Path, docs_server: FakeServer, which: str) -> None:
    collector = home_from(seeded, tmp_path, docs_server)
    path = stores(collector.data_dir)[which]
    before = rows(path)
    hold = 4.0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(hold)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked", holder.stderr.read()
        started = time.time()
        _, log = docs_round(collector)
        took = time.time() - started
        out, err = holder.communicate(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
    assert holder.returncode == 0, err
    released = float(out.strip())
    assert "] ERROR: " not in log and "Traceback" not in log, log[-3000:]
    # It waited for the lock (busy timeout) rather than failing or resetting the store …
    assert took >= released - started - 0.5, (took, released - started)
    assert not list(path.parent.glob("*.unreadable-*"))
    # … and both writers' data is there: the other process's row and everything before.
    assert rows(path) >= before + 1
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        value = conn.execute("SELECT value FROM entries WHERE key = x'00ff'").fetchone()
        assert value == ("written by another process",)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_damage_helpers_really_damage(tmp_path: Path, seeded: Path) -> None:
    """Guards the test itself: each damaged file is refused by SQLite or by the store check."""
    from scraper.stores.sqlite import StoreError, _connect

    for n, (which, damage, _) in enumerate(DAMAGES):
        copy = tmp_path / str(n)
        shutil.copytree(seeded, copy)
        path = stores(copy)[which]
        damage(path)
        with pytest.raises((sqlite3.DatabaseError, StoreError)):
            conn: Any = _connect(path, which, 1, "SELECT 1;")
            conn.close()


VICTIM = b'{"outside": "data_dir"}\n{"not a whole line'
"""A file outside data_dir that a symlink points at: it must never be written."""


@pytest.mark.timeout(90)
@pytest.mark.parametrize("which", ["part", "log", "deltafetch", "deltafetch-wal",
                                   "contenthash"])
def test_symlinks_in_data_dir_are_never_followed(tmp_path: Path, seeded: Path,
                                                 docs_server: FakeServer, which: str) -> None:
    collector = home_from(seeded, tmp_path, docs_server)
    victim = tmp_path / "victim"
    # A zero-byte file is what SQLite would take for a new store and write into.
    victim.write_bytes(b"" if which in ("deltafetch", "contenthash") else VICTIM)
    before = victim.read_bytes()
    data = collector.data_dir
    link = {"part": data / "items" / "docs" / "docs-0of1-20200101T000000Z.jsonl.part",
            "log": data / "logs" / "docs-0of1.log",
            "deltafetch-wal": Path(f"{stores(data)['deltafetch']}-wal"),
            **stores(data)}[which]
    link.parent.mkdir(parents=True, exist_ok=True)
    if which in stores(data):
        link.unlink()
    link.unlink(missing_ok=True)
    link.symlink_to(victim)
    if which == "part":  # the open segment a start looks at is the one its pointer names
        pointer = data / "state" / "segments" / "docs-0of1.open"
        pointer.parent.mkdir(parents=True, exist_ok=True)
        pointer.write_text(link.name + "\n")

    if which == "log":  # nothing to log to: ``scrapy crawl`` refuses before Scrapy starts
        result = collector.crawl("docs", SHARD)
        assert victim.read_bytes() == before
        assert "Traceback" not in result.stderr
        assert result.returncode == 2
        assert result.stderr.splitlines() == [
            f"scrapy crawl: data_dir {data}: cannot write {link}: it is a symbolic link, which "
            "is never followed; replace it by a file"]
        return
    _, log = docs_round(collector)
    assert victim.read_bytes() == before
    errors = [line for line in log.splitlines() if "] ERROR: " in line]
    assert len(errors) == 1 and "symbolic link" in errors[0] and str(victim) in errors[0], errors
    assert "Traceback" not in log
    if which == "part":
        assert link.is_symlink()  # left for a human to look at
    else:
        assert not link.is_symlink() and list(link.parent.glob("*.unreadable-*"))


class CloseAfterFirstLook:
    """``os`` for :mod:`scraper.stores.sqlite`, with another process's last close of the store
    landing right after the opener's first look at the file: SQLite then checkpoints the WAL
    into the file (its header and size grow) and deletes the WAL, the worst instant of a kill
    test's restarts."""

    def __init__(self, other: Any) -> None:
        self.other = other
        self.looks = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def stat(self, *args: Any, **kwargs: Any) -> os.stat_result:
        return self._then_close(os.stat(*args, **kwargs))

    def fstat(self, fd: int) -> os.stat_result:
        return self._then_close(os.fstat(fd))

    def open(self, *args: Any, **kwargs: Any) -> Any:
        return self._then_close(open(*args, **kwargs))

    def _then_close(self, result: Any) -> Any:
        self.looks += 1
        if self.looks == 1:
            self.other.close()
        return result


def test_a_whole_store_closed_by_another_process_while_it_opens_is_not_moved_aside(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last other connection's close may checkpoint and delete the WAL between two looks
    at the file: the opener must not judge the grown header against a size read before it."""
    import scraper.stores.sqlite as sqlite_stores
    from scraper.dedup.sqlitehashes import SqliteContentHashStore

    path = tmp_path / "docs.sqlite"
    other = SqliteContentHashStore(path)
    for n in range(400):  # enough pages in the WAL that its checkpoint grows the file
        other.confirm(f"{n:032x}", "2026-12-01T00:00:00Z")
    assert Path(f"{path}-wal").stat().st_size > 0
    looks = CloseAfterFirstLook(other)
    monkeypatch.setattr(sqlite_stores, "os", looks)
    monkeypatch.setattr(sqlite_stores, "open", looks.open, raising=False)
    store = SqliteContentHashStore(path)
    monkeypatch.undo()
    try:
        assert looks.looks >= 1  # the close really landed inside the open
        assert not list(tmp_path.glob("*.unreadable-*"))
        assert len(store) == 400
    finally:
        store.close()
