"""Crash-safe SQLite files for the collector's persistent state.

Every store is one SQLite database in WAL mode, in autocommit (each write is its own
transaction), with ``synchronous=NORMAL``: a ``kill -9`` at any instant loses no committed write
and never corrupts the file; a power cut may lose the last writes but still not corrupt it.

A store is never deleted or silently reset. A file that cannot be opened as this kind of store
(truncated, not SQLite, another schema, a newer version) is moved aside to
``<name>.unreadable-<UTC stamp>`` with its WAL files, an error is logged, and a new one is made.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from scraper.utils.diskspace import is_disk_full, report_disk_full
from scraper.utils.statefile import create_private

logger = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 30_000
"""Two processes may share a store (a shard run by hand beside the runner): wait, don't fail."""


class StoreError(Exception):
    """The file is not a usable store of the expected kind."""


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction; IMMEDIATE takes the write lock up front, so two processes never
    decide from the same state. All of it or none survives a kill."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def open_store(path: Path, kind: str, version: int, schema: str) -> sqlite3.Connection:
    """Open (or create) the store at ``path``, moving an unusable file aside first.

    ``kind`` and ``version`` are recorded in the file (``application_id`` is not portable
    across tools, so a small ``meta`` table holds them); ``schema`` is idempotent DDL.
    """
    links = [(link.name, os.readlink(link)) for link in _files(path) if link.is_symlink()]
    if links:
        # SQLite would write through the link (and put its -wal beside the target): never.
        aside = move_aside(path)
        logger.error("store %s: %s is a symbolic link (to %s), which is never followed; moved "
                     "aside to %s, starting a new one", path, *links[0], aside.name)
    try:
        return _connect(path, kind, version, schema)
    except sqlite3.OperationalError:
        raise  # locked, disk full, I/O error: the file may be fine, never move it aside
    except (sqlite3.DatabaseError, StoreError) as exc:
        aside = move_aside(path)
        logger.error("store %s is unusable (%s); moved aside to %s, starting a new one",
                     path, exc, aside.name)
        return _connect(path, kind, version, schema)


class StoreConnection(sqlite3.Connection):
    """A connection that reports a full disk (SQLITE_FULL: the file or its -wal could not grow)
    the moment any store meets it, so the round ends the way a full item disk ends it."""

    path: Path

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return self._reporting(super().execute, sql, parameters)

    def executescript(self, script: str, /) -> sqlite3.Cursor:
        return self._reporting(super().executescript, script)

    def _reporting(self, method: Callable[..., sqlite3.Cursor], *args: Any) -> sqlite3.Cursor:
        try:
            return method(*args)
        except sqlite3.OperationalError as exc:
            if is_disk_full(exc):
                report_disk_full(f"cannot write the store {self.path}", exc)
            raise


QUICK_CHECK_MAX_BYTES = 8 * 1024 * 1024
"""Stores up to this size get SQLite's ``quick_check`` at every open (a few ms); larger ones
only the O(1) length check: a per-open cost that grew with the store (0.38 s at 1M keys, every
worker, every round) would make a year of history slower to start than a day."""


def check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a file that is not whole: not SQLite, or shorter than its header says (a torn
    copy); small stores also pass ``quick_check``. Raises :class:`StoreError` (or SQLite's
    DatabaseError). Damage deeper in a large store surfaces as a DatabaseError when read, as it
    would between two opens."""
    # All of it inside one read transaction: SQLite's shared lock keeps another process's last
    # close from checkpointing and deleting the WAL between the looks below (a header grown, a
    # size read before it, the WAL gone: a whole store judged torn). The file itself is only
    # ever stat-ed, never opened: closing any descriptor of it would drop every POSIX lock this
    # process holds on it, SQLite's own included, and let another process corrupt it.
    conn.execute("BEGIN")
    try:
        # The first read: SQLite refuses a file that is not a database, or shorter than its
        # header says, here.
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        size = _file_size(path)
        # With a WAL in use, pages counted may be in it and not yet in the file (a checkpoint
        # cut short grows the header before the pages; SQLite finishes the job): judge only a
        # file alone.
        if pages * page_size > size and not _wal_in_use(path):
            raise StoreError(f"truncated: its header says {pages * page_size} bytes, the file "
                             f"holds {size}")
        if size <= QUICK_CHECK_MAX_BYTES:
            result = conn.execute("PRAGMA quick_check").fetchone()
            if result is None or result[0] != "ok":
                raise StoreError(f"integrity check failed: {result and result[0]}")
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")


def _file_size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:  # an in-memory store
        return 0


def _wal_in_use(path: Path) -> bool:
    try:
        return os.stat(f"{path}-wal").st_size > 0
    except FileNotFoundError:
        return False


def _connect(path: Path, kind: str, version: int, schema: str) -> sqlite3.Connection:
    if str(path) != ":memory:":
        create_private(path)  # SQLite gives its -wal and -shm files the database's mode
    conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                           check_same_thread=False, factory=StoreConnection)
    conn.path = path
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        # Only read until the file is known to be ours: a file that is not is moved aside exactly
        # as it was found (no WAL switch, no meta table added to someone else's database).
        check_integrity(conn, path)
        tables = {row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}
        found = _meta(conn, kind) if "meta" in tables else {}
        if not found and tables - {"meta"}:
            raise StoreError(f"unknown tables {sorted(tables - {'meta'})}, not a {kind} store")
        if found:
            _check_meta(found, kind, version)
        _switch_to_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        if not found:  # a new store (or an empty file): make it ours
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('kind', ?), ('version', ?)",
                         (kind, str(version)))
            conn.execute("COMMIT")
            _check_meta(_meta(conn, kind), kind, version)  # another process may have won
        conn.executescript(schema)
    except BaseException:
        conn.close()
        raise
    return conn


def _meta(conn: sqlite3.Connection, kind: str) -> dict[str, str]:
    columns = {row[1] for row in conn.execute("PRAGMA table_info(meta)")}
    if not {"key", "value"} <= columns:
        raise StoreError(f"a 'meta' table of another schema, not a {kind} store")
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def _check_meta(found: dict[str, str], kind: str, version: int) -> None:
    if found.get("kind") != kind:
        raise StoreError(f"a {found.get('kind')!r} store, not a {kind!r} store")
    if found.get("version") != str(version):
        raise StoreError(f"{kind} store version {found.get('version')}, expected {version}")


CACHE_KIB = 512
"""Page cache per connection. SQLite's default (2 MB) times three stores times 20 workers is
memory a 2 GB box needs elsewhere; lookups here are single-row, by primary key."""
WAL_SWITCH_TRIES = 50


def _switch_to_wal(conn: sqlite3.Connection) -> None:
    """``journal_mode=WAL`` needs the file to itself for a moment and ignores the busy timeout:
    when several workers open a new store at once, the losers retry instead of failing."""
    for attempt in range(WAL_SWITCH_TRIES):
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == WAL_SWITCH_TRIES - 1:
                raise
            time.sleep(0.05 + 0.01 * attempt)


def move_aside(path: Path, why: str = "unreadable") -> Path:
    """Rename ``path`` (and its ``-wal``/``-shm`` files) to ``<name>.<why>-<stamp>``, out of the
    way; returns the new path."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{path.name}.{why}-{stamp}")
    n = 1
    while aside.exists():
        aside = path.with_name(f"{path.name}.{why}-{stamp}-{n}")
        n += 1
    for source in _files(path):
        if os.path.lexists(source):  # a dangling symlink is moved too, never followed
            source.rename(f"{aside}{source.name.removeprefix(path.name)}")
    return aside


def _files(path: Path) -> list[Path]:
    """The store and the WAL files SQLite keeps beside it."""
    return [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm")]
