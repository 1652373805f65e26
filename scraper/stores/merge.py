"""Folding legacy per-shard stores into a spider's one shared store.

A legacy store is one spider-shard's own (``deltafetch/{spider}-{i}of{N}/deltafetch.sqlite``,
``contenthash/{spider}-{i}of{N}.sqlite``), as a machine upgraded in place still has. On the
first start of any shard of the spider, each old store's rows are copied into the shared one
(``INSERT OR IGNORE``: a row already there wins) in one transaction, and only after that
transaction committed is the old file renamed ``<name>.merged-<stamp>`` — never deleted. A kill
at any instant is safe: before the commit nothing changed; after it, the next start copies the
same rows again, which changes nothing, and then renames the file. Two shards starting at once
serialise on the shared store's write lock and do the same. A per-shard store that cannot be
read is moved aside as ``.unreadable-<stamp>`` with an error, like any store."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from pathlib import Path
from urllib.parse import quote

from scraper.stores.sqlite import BUSY_TIMEOUT_MS, move_aside, transaction

logger = logging.getLogger(__name__)


def merge_stores(target: sqlite3.Connection, sources: list[Path], kind: str,
                 tables: tuple[str, ...]) -> int:
    """Copy ``tables`` of every store in ``sources`` into ``target`` (an open store of
    ``kind``), then move each source aside; returns the number of sources merged."""
    merged = 0
    for source in sources:
        try:
            rows = _copy(target, source, kind, tables)
        except FileNotFoundError:
            continue  # another shard merged and moved it in the meantime
        except sqlite3.OperationalError:
            raise  # locked, disk full: the file may be fine; try again at the next start
        except sqlite3.DatabaseError as exc:
            with contextlib.suppress(FileNotFoundError):
                aside = move_aside(source)
                logger.error("old %s store %s is unusable (%s); moved aside to %s, not merged",
                             kind, source, exc, aside.name)
            continue
        with contextlib.suppress(FileNotFoundError):  # another shard moved it first
            aside = move_aside(source, "merged")
            logger.warning("merged the old per-shard %s store %s (%d rows) into %s; kept as %s",
                           kind, source, rows, _path_of(target), aside.name)
        merged += 1
    return merged


def _copy(target: sqlite3.Connection, source: Path, kind: str, tables: tuple[str, ...]) -> int:
    if not source.exists():
        raise FileNotFoundError(source)
    # mode=rw: never create a file that another shard has just moved away.
    old = sqlite3.connect(f"file:{quote(str(source))}?mode=rw", uri=True,
                          timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
        present = {row[0] for row in old.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}
        found = dict(old.execute("SELECT key, value FROM meta")) if "meta" in present else {}
        if found.get("kind") != kind:
            raise sqlite3.DatabaseError(f"a {found.get('kind')!r} store, not a {kind!r} store")
        copied = 0
        with transaction(target):
            for table in tables:
                if table not in present:
                    continue
                before = target.total_changes
                target.executemany(f"INSERT OR IGNORE INTO {table} VALUES (?, ?)",
                                   old.execute(f"SELECT * FROM {table}"))
                copied += target.total_changes - before
        return copied
    finally:
        old.close()  # the last connection: SQLite checkpoints the WAL into the file


def _path_of(conn: sqlite3.Connection) -> str:
    return next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
