"""``python -m runner catalog``: load item files into ``{data_dir}/catalog.sqlite``.

* **Incremental**: only files not yet in ``loaded_files`` are read; a re-run adds nothing.
* **Fresh**: open segments (``.part``) are loaded too, their whole lines only: ``loaded_files``
  keeps, under the ``.part`` name, the byte after the last line loaded, in the transaction that
  loads them; the next build reads on from there, and once the segment is closed (``.jsonl``,
  or ``.jsonl.gz``: the same lines) only what follows it. Each line is loaded once.
* **Safe beside the collector**: an open segment is read only to its last newline (a line a
  round is writing, a torn tail a kill left, is never read); a closed file is never written
  again. An open segment whose shard no process holds (its worker lock free), past its hour
  and unwritten for a whole hour, is closed first (:mod:`pipelines.idlesegments`), as that
  shard's next round would.
* **Crash-safe**: each file, or group of small files (:data:`GROUP_BYTES`; in a bulk build,
  about a :data:`BULK_COMMITS`-th of them), is one transaction that also records the files as
  loaded, so a kill mid-build leaves the catalog as it was after
  the last whole group (readers keep using it, WAL) and the next run loads the rest. Every
  merge below is order-independent, so that run ends with the same tables as one clean build.
* **Bounded memory**: lines are streamed into per-group temporary tables in chunks, then merged
  in SQL; nothing grows with the number of items.
* **One build at a time**: a second build (the runner's, or one by hand) steps aside.
* **No file stops it**: a line longer than ``CATALOG_MAX_LINE_BYTES`` is skipped unread (one
  that would build more than ``CATALOG_MAX_LINE_VALUES`` values, unparsed), and a
  file that cannot be read (not gzip, truncated, a bad CRC, not UTF-8) is set aside under
  ``quarantine/`` with one line saying why; its group is loaded again without it
  (:mod:`runner.catalog.segmentread`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.idlesegments import close_if_idle, segment_policy
from pipelines.segments import PART_SUFFIX
from runner.catalog import trendingsnapshots as trending
from runner.catalog.ledgerload import load_ledger
from runner.catalog.records import (
    FIDELITY_FIELDS,
    BadRecord,
    developer_snapshot,
    docs_row,
    is_developer_snapshot,
    is_page_snapshot,
    page_snapshot,
    parse_line,
    search_row,
    stamp,
)
from runner.catalog.retention import remove_older
from runner.catalog.schema import INDEXES, connect
from runner.catalog.segmentread import Line, UnreadableSegment, segment_lines
from runner.core.runargs import redis_url_arg
from runner.core.usage import INTERRUPTED
from runner.core.usage import PROG as RUNNER
from scraper.config.collector import CollectorConfig
from scraper.settings import CATALOG_MAX_LINE_BYTES, CATALOG_MAX_LINE_VALUES
from scraper.utils.bounds import json_value_bound
from scraper.utils.itemsizes import forget, forget_all
from scraper.utils.layout import DataLayout
from scraper.utils.pidlock import exclusive_or_skip
from scraper.utils.quarantine import set_aside
from scraper.utils.stamps import utc_stamp

PROG = f"{RUNNER} catalog"
CHUNK = 2000
"""Rows buffered before they go to SQLite: bounds memory, keeps executemany efficient."""
CLOSED_SUFFIXES = (".jsonl", ".jsonl.gz")
"""Closed item files (segments, or a round's file in older data dirs)."""
OPEN_SUFFIX = ".jsonl" + PART_SUFFIX
"""An open segment: loaded to its last whole line."""
GROUP_BYTES = 4 * 1024 * 1024
"""Item files loaded in one transaction, up to this many bytes: a first build of thousands of
hourly segments pays the merges and the commit once per group, not once per file. A kill loses
at most the group being loaded, which the next build loads again."""
DEFER_INDEX_FILES = 1000
DEFERRED_INDEXES = ("page_rows_by_name", "repo_stars_by_id")
"""A build of more new files than that (a first build) drops these indexes while it loads and
makes them once at the end. Filled row by row, its pages (one run per repository) are all
touched again at every commit: a year's first build wrote 20 GB for a 0.8 GB catalog and
became disk-bound. Sorted once at the end, it is written once. The merges find page rows by
page_id and do not need it; a kill meanwhile leaves it to the next connect, which makes it."""
BULK_COMMITS = 4
"""A build of more than :data:`DEFER_INDEX_FILES` new files (a first build, a catch-up) commits
them in about this many transactions (merging every :data:`GROUP_BYTES` within each): every
commit writes each page it touched twice (the WAL, then the checkpoint), and the tables kept
in key order (``repos``, ``repo_stars``, the histories, ``docs_pages``) are touched all over
by any few hours of items, so a commit every 4 MB rewrote them some 850 times in a year's
first build (25 GB written for a 1.24 GB catalog). A month's first build wrote 2.26× the
catalog's size in 4 commits, 2.44× in 8, 2.93× in 16. A kill loses at most the transaction
being loaded, which the next build loads again; the WAL grows to what one of them touched
(then is checkpointed and reused)."""
WARNINGS_PER_FILE = 5
"""Bad lines named one by one in a file; the rest are counted in one more line."""

_REPO_META = ("full_name", "description", "language", "stargazers_count", "forks_count",
              "topics", "license", "created_at", "pushed_at", "archived")

TEMP_DDL = (
    *trending.TEMP_DDL,
    f"CREATE TEMP TABLE IF NOT EXISTS search (id, collected_at, {', '.join(_REPO_META)})",
    "CREATE TEMP TABLE IF NOT EXISTS docs (url, content_hash, collected_at, title, markdown, "
    f"version, {', '.join(FIDELITY_FIELDS)})",
)

MERGE_SQL = (
    *trending.MERGE_SQL,
    # Search results: every star count, and the latest metadata per repository.
    "INSERT OR IGNORE INTO repo_stars SELECT id, collected_at, stargazers_count FROM temp.search",
    f"INSERT INTO repos SELECT id, {', '.join(_REPO_META)}, first_seen, collected_at FROM "
    "(SELECT *, min(collected_at) OVER (PARTITION BY id) AS first_seen, row_number() OVER "
    "(PARTITION BY id ORDER BY collected_at DESC, stargazers_count DESC, full_name) AS n "
    "FROM temp.search) WHERE n = 1 ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = iif(excluded.last_seen >= last_seen, excluded.{c}, {c})"
                for c in _REPO_META)
    + ", first_seen = min(first_seen, excluded.first_seen), "
    "last_seen = max(last_seen, excluded.last_seen)",
    "DELETE FROM temp.search",
    # Docs: every content a page had; the page's row recomputed from them.
    "INSERT INTO docs_versions SELECT url, content_hash, min(collected_at), title FROM temp.docs "
    "GROUP BY url, content_hash ON CONFLICT (url, content_hash) DO UPDATE SET "
    "first_seen = min(first_seen, excluded.first_seen)",
    # One content hash is one content: the first line of it loaded says what it says.
    f"INSERT OR IGNORE INTO docs_contents (url, content_hash, title, markdown, version, "
    f"{', '.join(FIDELITY_FIELDS)}) SELECT url, content_hash, title, markdown, version, "
    f"{', '.join(FIDELITY_FIELDS)} FROM temp.docs ORDER BY collected_at",
    "INSERT OR REPLACE INTO docs_pages SELECT v.url, v.title, v.content_hash, a.first_seen, "
    "a.last_changed, a.versions FROM (SELECT url, min(first_seen) AS first_seen, "
    "max(first_seen) AS last_changed, count(*) AS versions FROM docs_versions "
    "WHERE url IN (SELECT url FROM temp.docs) GROUP BY url) a "
    "JOIN docs_versions v ON v.url = a.url AND v.first_seen = a.last_changed "
    "ORDER BY v.content_hash",  # a tie: the greatest hash is written last, and kept
    # In the same transaction: the docs feeds redo these pages' entries, and only these.
    "INSERT OR IGNORE INTO docs_feed_pending SELECT DISTINCT url, content_hash FROM temp.docs",
    "DELETE FROM temp.docs",
)

Warn = Callable[[str], None]


@dataclass(slots=True)
class BuildResult:
    files: int = 0
    lines: int = 0
    bad_lines: int = 0
    seconds: float = 0.0
    busy: bool = False  # another build held the lock: this one did nothing
    removed: int = 0  # compressed segments removed (items_keep_days)
    quarantined: int = 0  # unreadable files set aside
    open_lines: int = 0  # of the lines, those read from open segments
    closed_idle: int = 0  # open segments of shards no process holds, closed by this build

    def describe(self, path: Path) -> str:
        if self.busy:
            return f"catalog: another build is running on {path}; nothing done"
        notes = f" ({self.open_lines:,} from open segments)" if self.open_lines else ""
        if self.closed_idle:
            notes += f", {self.closed_idle:,} idle open segments closed"
        notes += f", {self.bad_lines:,} bad lines skipped" if self.bad_lines else ""
        if self.quarantined:
            notes += f", {self.quarantined:,} unreadable files set aside in quarantine/"
        if self.removed:
            notes += f", {self.removed:,} old compressed segments removed"
        return (f"catalog: {self.files:,} new files, {self.lines:,} lines{notes} in "
                f"{self.seconds:.1f} s -> {path}")


def _stderr(line: str) -> None:
    print(f"{PROG}: {line}", file=sys.stderr)


def build_catalog(layout: DataLayout, config: CollectorConfig | None = None, *,
                  warn: Warn = _stderr) -> BuildResult:
    """Load every item line not loaded yet; then take samples and write the feeds."""
    started = time.monotonic()
    result = BuildResult()
    with exclusive_or_skip(layout.catalog_lock) as mine:
        if not mine:
            result.busy = True
            return result
        try:
            return _build(layout, config, warn, result, started)
        except sqlite3.DatabaseError as exc:
            if type(exc) is not sqlite3.DatabaseError:  # locked, full, I/O: not damage
                raise
            aside = move_aside(layout.catalog_db)
            warn(f"{layout.catalog_db}: damaged ({exc}); moved aside to {aside.name}, "
                 "rebuilding it from the item files")
            return _build(layout, config, warn, BuildResult(), started)


def move_aside(db: Path) -> Path:
    """A damaged catalog (and its -wal, -shm) renamed, never deleted: it is built again from
    the item files, which it only summarises."""
    aside = db.with_name(f"{db.name}.damaged-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    for suffix in ("", "-wal", "-shm"):
        source = db.with_name(db.name + suffix)
        if source.exists():
            os.replace(source, aside.with_name(aside.name + suffix))
    return aside


def _build(layout: DataLayout, config: CollectorConfig | None, warn: Warn,
           result: BuildResult, started: float) -> BuildResult:
    conn = connect(layout.catalog_db)
    try:
        for statement in TEMP_DDL:
            conn.execute(statement)
        files = new_files(conn, layout)
        if config is not None:
            files = _close_idle(layout, config, files, result)
        files = [item for item in files if grown(item)]
        deferred = len(files) > DEFER_INDEX_FILES
        if deferred:
            for name in DEFERRED_INDEXES:
                conn.execute(f"DROP INDEX IF EXISTS {name}")
        for group in groups(files, commit_bytes(files) if deferred else GROUP_BYTES):
            loaded, lines, bad = load_group(conn, layout, group, warn)
            result.files += sum(not item.open for item in loaded)
            result.quarantined += sum(not item.open and item not in loaded for item in group)
            result.lines += lines
            result.open_lines += sum(item.read.lines for item in loaded if item.open)
            result.bad_lines += bad
        if deferred:
            for name in DEFERRED_INDEXES:
                conn.execute(next(sql for sql in INDEXES if f" {name} " in sql))
        _take_samples(conn, layout)
        load_ledger(conn, layout)
        if config is not None and config.items_keep_days:
            result.removed = remove_loaded_segments(conn, layout, config.items_keep_days)
        if config is not None:
            from runner.catalog.docsfeeds import write_docs_feeds
            from runner.catalog.feeds import write_feeds

            said: set[str] = set()

            def warn_once(line: str) -> None:  # both kinds of feed need feedgen
                if line not in said:
                    said.add(line)
                    warn(line)

            write_feeds(conn, layout, config.github.web_url, warn=warn_once)
            write_docs_feeds(conn, layout, config.docs.start_entries(), warn=warn_once)
    finally:
        conn.close()
    result.seconds = time.monotonic() - started
    return result


@dataclass(frozen=True, slots=True)
class Loaded:
    """What the catalog holds of a segment loaded while open: its first ``end`` bytes, that is
    ``lines`` whole lines, ``bad`` of them skipped."""
    end: int = 0
    lines: int = 0
    bad: int = 0


@dataclass(slots=True)
class ItemFile:
    """An item file to load: ``rel`` (relative to items/), at ``path``, after what ``before``
    says was loaded of it while it was open."""
    rel: str
    path: Path
    before: Loaded = Loaded()
    read: Loaded = Loaded()  # what this build read of it (end: bytes, from before.end)

    @property
    def open(self) -> bool:
        return self.rel.endswith(PART_SUFFIX)

    @property
    def open_rel(self) -> str:
        """Its name in ``loaded_files`` while open."""
        return self.rel if self.open else self.rel.removesuffix(".gz") + PART_SUFFIX


def new_files(conn: Any, layout: DataLayout) -> list[ItemFile]:
    """Item files that may have lines not loaded yet, sorted: closed ones not loaded, and every
    open segment (each with what was loaded of it; :func:`grown` drops those with nothing new).

    One spider directory's loaded names are read in one query and held while it is listed
    (a few MB after a year of hourly segments); a query per file cost more than the build
    itself then (62,000 of them, 5 s).
    """
    found: list[ItemFile] = []
    root = layout.items_root
    if not root.is_dir():
        return found
    for spider_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        prefix = f"{spider_dir.name}/"
        span = (prefix, prefix[:-1] + chr(ord("/") + 1))
        loaded = {path for path, in conn.execute(
            "SELECT path FROM loaded_files WHERE path >= ? AND path < ?", span)}
        opened = {path: Loaded(size, lines, bad) for path, size, lines, bad in conn.execute(
            "SELECT path, size, lines, bad_lines FROM loaded_files WHERE path >= ? AND "
            "path < ? AND path GLOB '*.part'", span)}
        with os.scandir(spider_dir) as entries:
            files = {entry.name: entry.path for entry in entries
                     if entry.name.endswith((*CLOSED_SUFFIXES, OPEN_SUFFIX)) and entry.is_file()}
        for name, path in files.items():
            rel = prefix + name
            if name.endswith(PART_SUFFIX):
                closed = name.removesuffix(PART_SUFFIX)
                if closed in files or closed + ".gz" in files:
                    continue  # closed meanwhile (a kill before the .part's removal): read that
                found.append(ItemFile(rel, Path(path), opened.get(rel, Loaded())))
            # A file gzipped after it was loaded (by the user, by hand) is the same file.
            elif rel not in loaded and rel.removesuffix(".gz") not in loaded:
                item = ItemFile(rel, Path(path))
                item.before = opened.get(item.open_rel, Loaded())
                found.append(item)
        del loaded, opened, files
    found.sort(key=lambda item: item.rel)
    return found


def grown(item: ItemFile) -> bool:
    """A closed file, or an open segment longer than what was loaded of it."""
    return not item.open or _size(item.path) > item.before.end


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:  # removed since it was listed: its load will say so
        return 0


def _close_idle(layout: DataLayout, config: CollectorConfig, files: list[ItemFile],
                result: BuildResult) -> list[ItemFile]:
    """``files`` with each open segment past its boundary whose shard no process holds closed
    first (what its shard's next round would do; a shard that runs no more closes none)."""
    now = time.time()
    for item in files:
        if not item.open:
            continue
        spider = item.rel.partition("/")[0]
        try:
            policy = segment_policy(config.spider(spider).settings)
        except KeyError:  # a directory of no configured spider: the defaults
            policy = segment_policy({})
        try:
            final = close_if_idle(layout, item.path, policy, due_only=True, now=now)
        except OSError as exc:  # no room to compress it: it stays open, whole
            _stderr(f"{item.path}: stays open ({exc.strerror})")
            continue
        if final is not None:
            result.closed_idle += 1
            item.rel = f"{spider}/{final.name}"
            item.path = final
    return files


def remove_loaded_segments(conn: Any, layout: DataLayout, keep_days: int,
                           now: float | None = None) -> int:
    """Remove ``.jsonl.gz`` segments the catalog holds that are older than ``keep_days``.

    Only compressed ones (the user chose to keep items small) and only once loaded: what the
    catalog has not read is never removed, and the catalog's own history never goes.
    """
    rows = conn.execute("SELECT path FROM loaded_files WHERE path LIKE '%.jsonl.gz'")
    removed = remove_older((layout.items_root / rel for rel, in rows), keep_days, now)
    if removed:
        forget_all(layout)
    return removed


class _Buffers:
    """Rows waiting for ``executemany``, flushed every :data:`CHUNK` rows."""

    SQL = {
        **{f"{kind.temp}{table}": sql for kind in trending.KINDS
           for table, sql in (("snap", kind.insert_snap), ("snaprows", kind.insert_snaprows))},
        "search": f"INSERT INTO temp.search VALUES ({', '.join('?' * (2 + len(_REPO_META)))})",
        "docs": f"INSERT INTO temp.docs VALUES ({', '.join('?' * (6 + len(FIDELITY_FIELDS)))})",
    }

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.rows: dict[str, list[tuple[Any, ...]]] = {name: [] for name in self.SQL}

    def add(self, name: str, rows: list[tuple[Any, ...]]) -> None:
        buffer = self.rows[name]
        buffer.extend(rows)
        if len(buffer) >= CHUNK:
            self.flush(name)

    def snapshot(self, kind: trending.ListTables, key: tuple[Any, ...],
                 rows: list[tuple[Any, ...]]) -> None:
        """A page snapshot: its rows once per distinct page, the fetch naming them."""
        rows_hash = trending.page_hash(rows)
        self.add(f"{kind.temp}snaprows", [(rows_hash, *row) for row in rows])
        self.add(f"{kind.temp}snap", [(*key, rows_hash)])

    def flush(self, name: str | None = None) -> None:
        for key in [name] if name else list(self.rows):
            if self.rows[key]:
                self.conn.executemany(self.SQL[key], self.rows[key])
                self.rows[key].clear()


def commit_bytes(files: list[ItemFile]) -> int:
    """Bytes of item files a bulk build loads in one transaction: :data:`BULK_COMMITS` of
    them in all, none under :data:`GROUP_BYTES`."""
    total = sum(max(0, _size(item.path) - item.before.end) for item in files)
    return max(GROUP_BYTES, total // BULK_COMMITS + 1)


def groups(files: list[ItemFile], limit: int) -> Iterator[list[ItemFile]]:
    """``files`` in runs of up to ``limit`` bytes (a larger file alone)."""
    group: list[ItemFile] = []
    size = 0
    for item in files:
        length = max(0, _size(item.path) - item.before.end)
        if group and size + length > limit:
            yield group
            group, size = [], 0
        group.append(item)
        size += length
    if group:
        yield group


def load_group(conn: Any, layout: DataLayout, files: list[ItemFile], warn: Warn
               ) -> tuple[list[ItemFile], int, int]:
    """:func:`load_files`, again without each file that turns out unreadable (set aside, one
    line; an open segment is left where it is, its writer still holds it, and is set aside
    once closed); (the files loaded, lines, bad lines). What the group's files said is said
    once, for the load that committed."""
    pending = list(files)
    while pending:
        said: list[str] = []
        try:
            lines, bad = load_files(conn, pending, said.append)
        except UnreadableSegment as exc:
            item = next(item for item in pending if item.path == exc.path)
            pending = [other for other in pending if other is not item]
            if item.open:
                warn(f"{exc.path}: {exc.why}; not loaded while open (set aside once closed)")
                continue
            aside = set_aside(layout, exc.path, layout.quarantined_item_file(item.rel), exc.why)
            forget(layout, item.rel.partition("/")[0])
            warn(f"{exc.path}: {exc.why}; set aside as {aside}, the other files load")
            continue
        for line in said:
            warn(line)
        return pending, lines, bad
    return [], 0, 0


def load_files(conn: Any, files: list[ItemFile], warn: Warn) -> tuple[int, int]:
    """Files in one transaction, each recorded as loaded in the same one; (lines, bad) read.

    An open segment is recorded under its ``.part`` name with the byte after its last line
    loaded; once closed, its record becomes the closed file's. The merges are
    order-independent, so a group gives the tables its files give one by one; it only pays
    the merges and the commit once for all of them. An unreadable file raises
    :class:`UnreadableSegment` after the rollback: nothing of the group is loaded.
    """
    buffers = _Buffers(conn)
    per_hour: dict[tuple[str, str], list[int]] = {}
    loaded = []
    unmerged = 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        for item in files:
            size = item.path.stat().st_size
            item.read = _read_file(item, buffers, per_hour, warn)
            end = item.before.end + item.read.end
            lines = item.before.lines + item.read.lines
            bad = item.before.bad + item.read.bad
            if item.open:
                loaded.append((item.rel, end, lines, bad, utc_stamp()))
            else:
                loaded.append((item.rel, size, lines, bad, utc_stamp()))
                if item.before.end:
                    conn.execute("DELETE FROM loaded_files WHERE path = ?", (item.open_rel,))
            unmerged += item.read.end
            if unmerged >= GROUP_BYTES:  # the temporary tables stay small in a long one
                _merge(conn, buffers)
                unmerged = 0
        _merge(conn, buffers)
        conn.executemany(
            "INSERT INTO items_per_hour VALUES (?, ?, ?, ?) ON CONFLICT (spider, hour) "
            "DO UPDATE SET items = items + excluded.items, bytes = bytes + excluded.bytes",
            [(spider, hour, n, b) for (spider, hour), (n, b) in per_hour.items()])
        conn.executemany("INSERT OR REPLACE INTO loaded_files VALUES (?, ?, ?, ?, ?)", loaded)
        conn.execute("COMMIT")
    except BaseException:
        # On a full disk or a damaged file the rollback may fail too (SQLite has rolled back
        # already): the first error is the one to report.
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    return sum(item.read.lines for item in files), sum(item.read.bad for item in files)


def _merge(conn: Any, buffers: _Buffers) -> None:
    buffers.flush()
    for statement in MERGE_SQL:
        conn.execute(statement)


def _read_file(item: ItemFile, buffers: _Buffers, per_hour: dict[tuple[str, str], list[int]],
               warn: Warn) -> Loaded:
    """One file's lines (after those loaded before) into the buffers and the hourly counts;
    what was read: bytes, lines, bad lines."""
    path = item.path
    size = lines = bad = 0
    for line in segment_lines(path, start=item.before.end, number=item.before.lines,
                              whole=item.open):
        lines += 1
        size += line.size
        try:
            record = _record(line)
            if is_page_snapshot(record):
                buffers.snapshot(trending.REPOSITORY_LISTS, *page_snapshot(record))
                continue
            if is_developer_snapshot(record):
                buffers.snapshot(trending.DEVELOPER_LISTS, *developer_snapshot(record))
                continue
            spider = record.get("spider")
            if spider == "search":
                buffers.add("search", [search_row(record)])
            elif spider == "docs":
                buffers.add("docs", [docs_row(record)])
            key = (str(spider), stamp(record)[:13] + ":00Z")
            counts = per_hour.setdefault(key, [0, 0])
            counts[0] += 1
            counts[1] += line.size
        except (ValueError, RecursionError) as exc:  # BadRecord, JSONDecodeError; too deep
            bad += 1
            if bad <= WARNINGS_PER_FILE:
                reason = exc if isinstance(exc, BadRecord) else f"not JSON ({exc})"
                warn(f"{path}:{line.number}: {reason}; line skipped")
    if bad > WARNINGS_PER_FILE:
        warn(f"{path}: {bad - WARNINGS_PER_FILE} more bad lines skipped")
    return Loaded(size, lines, bad)


def _record(line: Line) -> dict[str, Any]:
    if line.text is None:
        raise BadRecord(f"(line): {line.size:,} bytes, longer than CATALOG_MAX_LINE_BYTES "
                        f"({CATALOG_MAX_LINE_BYTES:,}); not read")
    values = json_value_bound(line.text)
    if values > CATALOG_MAX_LINE_VALUES:
        raise BadRecord(f"(line): up to {values:,} JSON values, more than "
                        f"CATALOG_MAX_LINE_VALUES ({CATALOG_MAX_LINE_VALUES:,}); not parsed")
    record = parse_line(line.text)
    if not isinstance(record, dict):
        raise BadRecord(f"(line): {line.text[:60]!r} is not a JSON object")
    return record


def _take_samples(conn: Any, layout: DataLayout) -> None:
    """What only the live data dir can tell later plots: its size and the GitHub budget now."""
    from runner.core.budgetview import budget_rows
    from runner.core.growth import read_samples, record_sample

    # The growth sample (at most 10 minutes old, a walk only when older): walking the data dir
    # at every build would cost what a year of segments costs to list.
    record_sample(layout)
    size = read_samples(layout)[-1][1]
    now = utc_stamp()
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT OR REPLACE INTO size_samples VALUES (?, ?)", (now, size))
    for row in budget_rows(layout):
        if row.get("limit") is not None and row.get("remaining") is not None:
            conn.execute("INSERT OR REPLACE INTO budget_samples VALUES (?, ?, ?, ?, ?)",
                         (now, row["resource"], row["identity"], row["limit"],
                          row["remaining"]))
    conn.execute("COMMIT")


# --- the command ----------------------------------------------------------------------------------


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = ("Load the item lines not loaded yet (closed files, and the whole "
                          "lines of open segments) into {data_dir}/catalog.sqlite, and update "
                          "the feeds.")
    add_config_option(parser)
    parser.add_argument("--take-over", action="store_true",
                        help="distributed mode: build the cluster's dataset on this box from "
                        "now on (every box ships its segments here)")
    # As run and status take it: the cluster whose dataset this box builds.
    parser.add_argument("--redis-url", type=redis_url_arg, metavar="URL",
                        help="distributed mode: gather the segments every box shipped to this "
                             "Redis (else config redis_url)")
    parser.add_argument("--scheduled", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(handler=cmd_catalog)


def cmd_catalog(args: argparse.Namespace, config: CollectorConfig) -> int:
    layout = DataLayout(config.data_dir)
    if config.redis_url:  # the cluster's dataset: built on one box, from every box's segments
        from runner.catalog.gather import gather

        if not gather(config, layout, take_over=args.take_over, scheduled=args.scheduled,
                      say=print, warn=_stderr):
            if config.items_keep_days:  # what the dataset box has is not kept twice
                from runner.catalog.gather import remove_confirmed_segments

                try:
                    remove_confirmed_segments(layout, config.items_keep_days)
                except OSError as exc:
                    _stderr(f"{exc.filename or layout.items_root}: {exc.strerror}")
            return 0
    try:
        result = build_catalog(layout, config)
    except OSError as exc:
        print(f"{PROG}: {exc.filename or layout.root}: {exc.strerror}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # Each file is loaded in its own transaction: what was finished stays, the rest waits.
        print(f"{PROG}: interrupted; run it again to finish", file=sys.stderr)
        return INTERRUPTED
    except sqlite3.Error as exc:  # a full disk, an I/O error: nothing half-loaded stays
        print(f"{PROG}: {layout.catalog_db}: {exc}", file=sys.stderr)
        return 1
    print(result.describe(layout.catalog_db))
    if not result.busy:
        from runner.catalog.sitefidelity import catalog_fidelity

        for site in catalog_fidelity(layout, config):
            print(f"docs fidelity: {site.describe()}")
    return 0
