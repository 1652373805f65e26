"""The page archive: every fetched listing page kept as it was served, for re-parsing later.

GitHub never serves the same bytes twice (each page carries a request id, nonces, CSRF
tokens), but two fetches of one list differ in little more than those. So each fetch's body is
one zstd frame compressed with its list's *head* as a raw-content dictionary
(:mod:`scraper.trending.deltas`): the head is the list's last page that moved on (its rows
read differently, :data:`ADVANCE_BYTES`), kept raw in a file beside the store, so a put
decompresses nothing. A frame names its base frame; every :data:`MAX_DEPTH` heads the list
starts again from a frame that stands alone, so giving a body back decompresses at most that
many frames. Each fetch is a small record (list, URL, when, HTTP status, the kept response
headers, the body's sha256, the parser version that read it and what that parse found). Every
body given back is checked against its sha256, and read within bounds: a body that does not
decompress, decompresses past ``TRENDING_MAX_BYTES`` or does not match is
:class:`UnreadableBody`, one line naming the fetch.

Archives of the earlier form (a gzipped template per distinct page and the values that differ
per fetch, :mod:`scraper.trending.gzipform`) stay readable: their records are moved into the
new table once, in one transaction, still naming their templates, and decode as before.

The store is chosen by ``TRENDING_ARCHIVE_STORAGE``, like the other stores
(:mod:`scraper.stores.base`: built with Scrapy's ``build_from_crawler``, as Scrapy builds
``HTTPCACHE_STORAGE``); the default keeps frames and records in
``{data_dir}/state/archive/{spider}.sqlite``, each list's head in
``{data_dir}/archive/{spider}/heads/`` (earlier templates beside them).

Crash safety: a fetch's frame and its record are written in one transaction, so a kill never
leaves a record without its body; a head file is only a copy of what the frames give, checked
before use and made again from them if it is not whole. Pruning deletes a frame only once no
kept fetch needs it (its own, or as the base of another's).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import zlib
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from scrapy.crawler import Crawler

from scraper import settings as defaults
from scraper.stores.base import AlwaysUp, Outage
from scraper.stores.sqlite import open_store, transaction
from scraper.trending import deltas
from scraper.trending.deltas import FrameError
from scraper.trending.gzipform import template_body, template_path
from scraper.utils.layout import DataLayout
from scraper.utils.stamps import ms_stamp, stamp_ms
from scraper.utils.statefile import private_dirs


@dataclass(frozen=True, slots=True)
class ParseProfile:
    """What one parse of a page found: the figures markup drift is judged by. On a developer
    page the three counts are rows with a display name, with a popular repository and with its
    description (scraper/trending/drift.py's ``DEVELOPER_FIELDS``)."""

    rows: int = 0
    with_language: int = 0  # rows with a language
    with_stars: int = 0  # rows with a star count above 0
    with_description: int = 0  # rows with a description
    rows_hash: str = ""  # sha256 of the parsed rows: a re-parse that changes nothing is seen


@dataclass(frozen=True, slots=True)
class ArchivedPage:
    """One fetch of one page."""

    url: str
    observed_at: str  # ISO-8601 UTC with milliseconds, as the page snapshot says
    status: int
    sha256: str  # the body as served
    list_key: str  # which list the page is, e.g. "daily|python|en"
    parser_version: str
    profile: ParseProfile = ParseProfile()
    drifted: bool = False  # its rows lost what the list had (scraper/trending/drift.py)
    headers: tuple[tuple[str, str], ...] = ()  # those TRENDING_ARCHIVE_HEADERS names


class UnreadableBody(ValueError):
    """An archived body that cannot be given back as served; the message is one line naming
    the fetch and why."""


def body_sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def unreadable(page: ArchivedPage, why: str) -> UnreadableBody:
    return UnreadableBody(f"archived page {page.url} fetched {page.observed_at}: {why}")


ADVANCE_BYTES = 4096
"""A page whose rows read differently from the head's moves on: it becomes the list's head, so
the fetches after it pay for what differs from it, not from an older page. So does one whose
frame is this large with the same rows (the markup changed). A fetch that only brings new
per-request values leaves the head as it is: the raw head is rewritten once per change of the
list, not at every fetch."""
MAX_DEPTH = 32
"""Frames between a body and the frame that stands alone it is built on: the most a body given
back decompresses (about 0.3 ms each for a real page)."""
CACHE_BYTES = 32 * 1024 * 1024
"""Bodies kept decompressed while reading, the bases later fetches of a list are built on: a
walk through the archive in time order decompresses each frame once, in bounded memory."""
BATCH = 500  # records read per query by pages(): no cursor is held open between batches

_FETCH_COLUMNS = (
    "u.url, s.observed, s.status, s.sha256, l.list_key, r.parser_version, r.rows, "
    "r.with_language, r.with_stars, r.with_description, r.rows_hash, s.drifted, h.headers")
_FETCH_FROM = (
    "FROM served s JOIN urls u ON u.id = s.url JOIN lists l ON l.id = s.list "
    "JOIN readings r ON r.id = s.reading LEFT JOIN header_sets h ON h.id = s.headers")


class FilesystemPageArchive(AlwaysUp):
    """Frames and fetch records in one SQLite store (templates of the earlier form as
    ``{sha256[:2]}/{sha256}.gz`` files); a :class:`~scraper.trending.archive.PageArchiveStorage`,
    built by ``build_from_crawler``."""

    KIND = "page-archive"
    VERSION = 1  # the earlier form's records are moved in place: the store is never set aside
    SCHEMA = """
    CREATE TABLE IF NOT EXISTS templates (
      template TEXT PRIMARY KEY, base_values BLOB NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS lists (id INTEGER PRIMARY KEY, list_key TEXT NOT NULL UNIQUE);
    CREATE TABLE IF NOT EXISTS urls (
      id INTEGER PRIMARY KEY, url TEXT NOT NULL, list INTEGER NOT NULL, UNIQUE (url, list));
    CREATE TABLE IF NOT EXISTS readings (
      id INTEGER PRIMARY KEY, parser_version TEXT NOT NULL, rows INTEGER NOT NULL,
      with_language INTEGER NOT NULL, with_stars INTEGER NOT NULL,
      with_description INTEGER NOT NULL, rows_hash TEXT NOT NULL,
      UNIQUE (rows_hash, parser_version, rows, with_language, with_stars, with_description));
    CREATE TABLE IF NOT EXISTS header_sets (id INTEGER PRIMARY KEY, headers TEXT NOT NULL UNIQUE);
    CREATE TABLE IF NOT EXISTS frames (
      id INTEGER PRIMARY KEY, base INTEGER, orphan INTEGER NOT NULL DEFAULT 0,
      frame BLOB NOT NULL);
    CREATE INDEX IF NOT EXISTS frames_by_base ON frames (base) WHERE base IS NOT NULL;
    CREATE TABLE IF NOT EXISTS heads (
      list INTEGER PRIMARY KEY, frame INTEGER NOT NULL, depth INTEGER NOT NULL,
      reading INTEGER NOT NULL, sha256 BLOB NOT NULL, size INTEGER NOT NULL,
      crc INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS served (
      list INTEGER NOT NULL, observed INTEGER NOT NULL, url INTEGER NOT NULL,
      status INTEGER NOT NULL, sha256 BLOB NOT NULL, headers INTEGER, reading INTEGER NOT NULL,
      drifted INTEGER NOT NULL, frame INTEGER, template TEXT, changes BLOB,
      PRIMARY KEY (list, observed, url)) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS served_by_time ON served (observed);
    CREATE INDEX IF NOT EXISTS served_by_template ON served (template) WHERE template IS NOT NULL;
    """

    def __init__(self, bodies: Path, records: Path,
                 max_bytes: int = defaults.TRENDING_MAX_BYTES) -> None:
        self.bodies = bodies
        self.max_bytes = max_bytes
        private_dirs(records.parent)
        self._conn = open_store(records, self.KIND, self.VERSION, self.SCHEMA)
        self._decoded: OrderedDict[int, bytes] = OrderedDict()
        self._decoded_bytes = 0
        _move_earlier_records(self._conn)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FilesystemPageArchive:
        layout = DataLayout.from_settings(crawler.settings)
        assert crawler.spidercls is not None
        return cls.at(layout, crawler.spidercls.name,
                      crawler.settings.getint("TRENDING_MAX_BYTES"))

    @classmethod
    def at(cls, layout: DataLayout, spider: str,
           max_bytes: int = defaults.TRENDING_MAX_BYTES) -> FilesystemPageArchive:
        return cls(layout.archive_dir(spider), layout.archive_db(spider), max_bytes)

    # --- writing ----------------------------------------------------------------------------

    def put(self, page: ArchivedPage, body: bytes) -> None:
        conn = self._conn
        replaced: list[Path] = []
        with transaction(conn):
            list_id = _id(conn, "lists", "list_key", page.list_key)
            url_id = _url_id(conn, page.url, list_id)
            reading = _reading_id(conn, page)
            row = conn.execute("SELECT frame, depth, reading, sha256, size, crc FROM heads "
                               "WHERE list = ?", (list_id,)).fetchone()
            head = None if row is None else self._head(list_id, *row)
            moves_on = head is None or row[2] != reading
            frame, base, depth = self._frame_for(body, head, moves_on)
            frame_id = _inserted(conn.execute("INSERT INTO frames (base, frame) VALUES (?, ?)",
                                              (base, frame)))
            conn.execute(
                "INSERT OR REPLACE INTO served (list, observed, url, status, sha256, headers, "
                "reading, drifted, frame) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (list_id, stamp_ms(page.observed_at), url_id, page.status,
                 bytes.fromhex(page.sha256), _headers_id(conn, page.headers), reading,
                 int(page.drifted), frame_id))
            if base is None or moves_on or len(frame) > ADVANCE_BYTES:
                replaced = self._write_head(list_id, frame_id, body)
                conn.execute("INSERT OR REPLACE INTO heads VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (list_id, frame_id, depth, reading, bytes.fromhex(page.sha256),
                              len(body), zlib.crc32(body)))
        for path in replaced:  # after the commit: until then the old head is the list's
            path.unlink(missing_ok=True)

    def _head_path(self, list_id: int, frame_id: int) -> Path:
        return self.bodies / "heads" / f"{list_id}-{frame_id}"

    def _head(self, list_id: int, frame_id: int, depth: int, reading: int, sha256: bytes,
              size: int, crc: int) -> tuple[int, int, bytes] | None:
        """(frame, depth, content) of the list's head. Its content is a file, written without
        fsync: checked by size and crc32, and if it is not whole (a crash, a disk that lost
        it), decompressed again from its frames and checked against its sha256. None if even
        that fails: the next frame then stands alone."""
        path = self._head_path(list_id, frame_id)
        try:
            content = path.read_bytes()
            if len(content) == size and zlib.crc32(content) == crc:
                return frame_id, depth, content
        except OSError:
            pass
        try:
            content = self._decode(frame_id)
        except FrameError:
            return None
        if hashlib.sha256(content).digest() != sha256:
            return None
        self._write_head(list_id, frame_id, content)
        return frame_id, depth, content

    def _write_head(self, list_id: int, frame_id: int, content: bytes) -> list[Path]:
        """Write the list's new head; returns the list's other head files, to remove once the
        new head is committed."""
        path = self._head_path(list_id, frame_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temporary.write_bytes(content)
        os.replace(temporary, path)
        return [other for other in path.parent.glob(f"{list_id}-*") if other != path]

    @staticmethod
    def _frame_for(body: bytes, head: tuple[int, int, bytes] | None, moves_on: bool
                   ) -> tuple[bytes, int | None, int]:
        """(frame, its base frame or None, its depth): against the head, unless the list has
        none, this page moves on from a chain as long as it may be, or it shares so little with
        the head that a frame standing alone is smaller."""
        if head is None:
            return deltas.compress(body, None), None, 0
        head_frame, head_depth, content = head
        frame = deltas.compress(body, content)
        moves_on = moves_on or len(frame) > ADVANCE_BYTES
        if moves_on and head_depth + 1 >= MAX_DEPTH:
            return deltas.compress(body, None), None, 0
        if len(frame) > len(body) // 16:
            alone = deltas.compress(body, None)
            if len(alone) <= len(frame):
                return alone, None, 0
        return frame, head_frame, head_depth + 1

    def reparsed(self, page: ArchivedPage) -> None:
        conn = self._conn
        with transaction(conn):
            key = _fetch_key(conn, page)
            if key is not None:
                conn.execute("UPDATE served SET reading = ?, drifted = ? "
                             "WHERE list = ? AND observed = ? AND url = ?",
                             (_reading_id(conn, page), int(page.drifted), *key))

    def prune(self, older_than: str) -> int:
        conn = self._conn
        cutoff = stamp_ms(older_than)
        with transaction(conn):
            gone = [row[0] for row in conn.execute(
                "SELECT frame FROM served WHERE observed < ? AND frame IS NOT NULL", (cutoff,))]
            templates = [row[0] for row in conn.execute(
                "SELECT DISTINCT template FROM served WHERE observed < ? AND template IS NOT NULL",
                (cutoff,))]
            count = conn.execute("DELETE FROM served WHERE observed < ?", (cutoff,)).rowcount
            conn.executemany("UPDATE frames SET orphan = 1 WHERE id = ?", [(f,) for f in gone])
            # A list not fetched since the cutoff starts again from a frame standing alone.
            gone_set = set(gone)
            heads = [(list_id, frame) for list_id, frame in conn.execute(
                "SELECT list, frame FROM heads") if frame in gone_set]
            conn.executemany("DELETE FROM heads WHERE list = ?", [(h[0],) for h in heads])
            _delete_unneeded_frames(conn, gone)
            unreferenced = [sha for sha in templates if conn.execute(
                "SELECT 1 FROM served WHERE template = ? LIMIT 1", (sha,)).fetchone() is None]
            conn.executemany("DELETE FROM templates WHERE template = ?",
                             [(sha,) for sha in unreferenced])
        self._forget_decoded()
        # After the commit: a kill here leaves files nothing names, never a record without one.
        for sha in unreferenced:
            template_path(self.bodies, sha).unlink(missing_ok=True)
        for list_id, frame in heads:
            self._head_path(list_id, frame).unlink(missing_ok=True)
        return count

    # --- reading ----------------------------------------------------------------------------

    def body(self, page: ArchivedPage) -> bytes:
        key = _fetch_key(self._conn, page)
        row = None if key is None else self._conn.execute(
            "SELECT s.frame, s.template, s.changes, t.base_values FROM served s "
            "LEFT JOIN templates t ON t.template = s.template "
            "WHERE s.list = ? AND s.observed = ? AND s.url = ?", key).fetchone()
        if row is None:
            raise unreadable(page, "no such fetch in the archive")
        frame_id, template, changes, base_values = row
        try:
            if frame_id is not None:
                body = self._decode(frame_id)
            elif base_values is None:
                raise FrameError(f"its template {template} is not recorded")
            else:
                body = template_body(self.bodies, template, base_values, changes, self.max_bytes)
        except FrameError as exc:
            raise unreadable(page, str(exc)) from None
        if body_sha256(body) != page.sha256:
            raise unreadable(page, f"does not match its sha256 {page.sha256}")
        return body

    def _decode(self, frame_id: int) -> bytes:
        """The body of a frame: its chain from the nearest body already decoded (or the frame
        standing alone it starts from), decompressed forward."""
        chain: list[tuple[int, bytes]] = []
        at: int | None = frame_id
        base: bytes | None = None
        while at is not None:
            if at in self._decoded:
                self._decoded.move_to_end(at)
                base = self._decoded[at]
                break
            row = self._conn.execute("SELECT base, frame FROM frames WHERE id = ?",
                                     (at,)).fetchone()
            if row is None:
                raise FrameError(f"its base frame {at} is missing")
            if len(chain) > MAX_DEPTH:
                raise FrameError(f"its chain of frames is longer than {MAX_DEPTH}")
            chain.append((at, row[1]))
            at = row[0]
        for i, (at, frame) in enumerate(reversed(chain)):
            base = deltas.decompress(frame, base, self.max_bytes)
            if i < len(chain) - 1:  # a base of the body asked for: later fetches need it too
                self._remember(at, base)
        assert base is not None
        return base

    def _remember(self, frame_id: int, body: bytes) -> None:
        self._decoded[frame_id] = body
        self._decoded_bytes += len(body)
        while self._decoded_bytes > CACHE_BYTES and self._decoded:
            self._decoded_bytes -= len(self._decoded.popitem(last=False)[1])

    def _forget_decoded(self) -> None:
        self._decoded.clear()
        self._decoded_bytes = 0

    def pages(self, since: str | None = None, until: str | None = None,
              lists: Sequence[str] | None = None) -> Iterator[ArchivedPage]:
        # In batches, no cursor held open: the caller may write to the store while it walks.
        where = ["s.observed >= ?", "s.observed < ?"]
        params: list[Any] = [stamp_ms(since) if since else 0,
                             stamp_ms(until) if until else 1 << 62]
        if lists is not None:
            where.append(f"l.list_key IN ({', '.join('?' * len(lists))})")
            params += list(lists)
        after: tuple[int, int, int] = (-1, 0, 0)
        while True:
            rows = self._conn.execute(
                f"SELECT {_FETCH_COLUMNS}, s.list, s.url {_FETCH_FROM} "
                f"WHERE {' AND '.join(where)} AND (s.observed, s.list, s.url) > (?, ?, ?) "
                f"ORDER BY s.observed, s.list, s.url LIMIT {BATCH}", (*params, *after)).fetchall()
            for row in rows:
                yield _page(row)
            if len(rows) < BATCH:
                return
            last = rows[-1]
            after = (last[1], last[-2], last[-1])

    def latest(self, url: str, at: str | None = None) -> ArchivedPage | None:
        before = stamp_ms(at) if at else 1 << 62
        found = [self._conn.execute(
            f"SELECT {_FETCH_COLUMNS} {_FETCH_FROM} WHERE s.list = ? AND s.url = ? "
            "AND s.observed <= ? ORDER BY s.observed DESC LIMIT 1",
            (list_id, url_id, before)).fetchone()
            for url_id, list_id in self._conn.execute(
                "SELECT id, list FROM urls WHERE url = ?", (url,)).fetchall()]
        rows = [row for row in found if row is not None]
        return _page(max(rows, key=lambda row: row[1])) if rows else None

    def list_keys(self) -> list[str]:
        return [row[0] for row in self._conn.execute(
            "SELECT list_key FROM lists l WHERE EXISTS (SELECT 1 FROM served s "
            "WHERE s.list = l.id) ORDER BY list_key")]

    def recent(self, list_key: str, limit: int, before: str) -> list[ArchivedPage]:
        return [_page(row) for row in self._conn.execute(
            f"SELECT {_FETCH_COLUMNS} {_FETCH_FROM} WHERE l.list_key = ? AND s.observed < ? "
            "AND NOT s.drifted ORDER BY s.observed DESC LIMIT ?",
            (list_key, stamp_ms(before), limit))]

    def close(self) -> None:
        self._forget_decoded()
        self._conn.close()


def _page(row: Sequence[Any]) -> ArchivedPage:
    url, observed, status, sha256, list_key, parser_version = row[:6]
    return ArchivedPage(url, ms_stamp(observed), status, sha256.hex(), list_key, parser_version,
                        profile=ParseProfile(*row[6:11]), drifted=bool(row[11]),
                        headers=tuple(tuple(pair) for pair in json.loads(row[12] or "[]")))


def _id(conn: sqlite3.Connection, table: str, column: str, value: str) -> int:
    row = conn.execute(f"SELECT id FROM {table} WHERE {column} = ?", (value,)).fetchone()
    if row is not None:
        return int(row[0])
    return _inserted(conn.execute(f"INSERT INTO {table} ({column}) VALUES (?)", (value,)))


def _inserted(cursor: sqlite3.Cursor) -> int:
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def _url_id(conn: sqlite3.Connection, url: str, list_id: int) -> int:
    row = conn.execute("SELECT id FROM urls WHERE url = ? AND list = ?", (url, list_id)).fetchone()
    if row is not None:
        return int(row[0])
    return _inserted(conn.execute("INSERT INTO urls (url, list) VALUES (?, ?)", (url, list_id)))


def _headers_id(conn: sqlite3.Connection, headers: tuple[tuple[str, str], ...]) -> int | None:
    return _id(conn, "header_sets", "headers", json.dumps(headers)) if headers else None


def _reading_id(conn: sqlite3.Connection, page: ArchivedPage) -> int:
    profile = page.profile
    values = (profile.rows_hash, page.parser_version, profile.rows, profile.with_language,
              profile.with_stars, profile.with_description)
    row = conn.execute(
        "SELECT id FROM readings WHERE rows_hash = ? AND parser_version = ? AND rows = ? "
        "AND with_language = ? AND with_stars = ? AND with_description = ?", values).fetchone()
    if row is not None:
        return int(row[0])
    return _inserted(conn.execute(
        "INSERT INTO readings (rows_hash, parser_version, rows, with_language, with_stars, "
        "with_description) VALUES (?, ?, ?, ?, ?, ?)", values))


def _fetch_key(conn: sqlite3.Connection, page: ArchivedPage) -> tuple[int, int, int] | None:
    """(list, observed, url) of a fetch's record, or None if the archive names no such list or
    URL."""
    row = conn.execute("SELECT l.id, u.id FROM lists l JOIN urls u ON u.list = l.id "
                       "WHERE l.list_key = ? AND u.url = ?", (page.list_key, page.url)).fetchone()
    return None if row is None else (row[0], stamp_ms(page.observed_at), row[1])


def _delete_unneeded_frames(conn: sqlite3.Connection, candidates: list[int]) -> None:
    """Delete each frame whose fetch is gone, that no frame is built on and no list's head is;
    then its base, on the same terms."""
    pending = list(candidates)
    while pending:
        frame_id = pending.pop()
        row = conn.execute("SELECT base, orphan FROM frames WHERE id = ?", (frame_id,)).fetchone()
        if row is None or not row[1]:
            continue
        if conn.execute("SELECT 1 FROM frames WHERE base = ? LIMIT 1", (frame_id,)).fetchone() \
                or conn.execute("SELECT 1 FROM heads WHERE frame = ?", (frame_id,)).fetchone():
            continue
        conn.execute("DELETE FROM frames WHERE id = ?", (frame_id,))
        if row[0] is not None:
            pending.append(row[0])


def _move_earlier_records(conn: sqlite3.Connection) -> None:
    """Records of the earlier form (the ``fetches`` table) into ``served``, once, in one
    transaction: a kill leaves them all where they were or all moved. Their bodies stay the
    templates they name."""
    def earlier() -> bool:
        return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                            "AND name = 'fetches'").fetchone() is not None

    if not earlier():
        return
    with transaction(conn):
        if not earlier():  # another process moved them first
            return
        cursor = conn.execute(
            "SELECT url, observed_at, status, sha256, template, changes, list_key, "
            "parser_version, rows, with_language, with_stars, with_description, rows_hash, "
            "drifted FROM fetches")
        while batch := cursor.fetchmany(BATCH):
            for (url, observed_at, status, sha256, template, changes, list_key, version,
                 rows, language, stars, description, rows_hash, drifted) in batch:
                page = ArchivedPage(url, observed_at, status, sha256, list_key, version,
                                    ParseProfile(rows, language, stars, description, rows_hash))
                list_id = _id(conn, "lists", "list_key", list_key)
                conn.execute(
                    "INSERT OR REPLACE INTO served (list, observed, url, status, sha256, "
                    "reading, drifted, template, changes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (list_id, stamp_ms(observed_at), _url_id(conn, url, list_id), status,
                     bytes.fromhex(sha256), _reading_id(conn, page), drifted, template, changes))
        conn.execute("DROP TABLE fetches")


def retention_cutoff(seconds: float | None, now: float | None = None) -> str | None:
    """The ``observed_at`` before which fetches are pruned, or None: kept forever."""
    if seconds is None:
        return None
    then = (time.time() if now is None else now) - seconds
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(then))


@runtime_checkable
class PageArchiveStorage(Outage, Protocol):
    """The page archive (:mod:`scraper.trending.archive`): every fetched trending page as served,
    for ``python -m runner reparse`` and ``archive``. Local to the box that fetched the page,
    in the distributed mode too, so always up."""

    def put(self, page: ArchivedPage, body: bytes) -> None:
        """Keep ``body`` and record the fetch."""

    def body(self, page: ArchivedPage) -> bytes:
        """The page's body as it was served; :class:`UnreadableBody` (one line naming the
        fetch) if it cannot be given back whole and checked."""

    def pages(self, since: str | None = None, until: str | None = None,
              lists: Sequence[str] | None = None) -> Iterator[ArchivedPage]:
        """Every recorded fetch observed at or after ``since`` and before ``until`` (of the
        lists ``lists`` names, by list key), oldest first, streamed."""

    def latest(self, url: str, at: str | None = None) -> ArchivedPage | None:
        """The last fetch of ``url`` observed at or before ``at`` (None: the last of all)."""

    def list_keys(self) -> list[str]:
        """The lists the archive holds fetches of, by list key."""

    def recent(self, list_key: str, limit: int, before: str) -> list[ArchivedPage]:
        """The list's last ``limit`` fetches observed before ``before`` that were not drifted,
        newest first: a markup change stays drift until the parser reads it again."""

    def reparsed(self, page: ArchivedPage) -> None:
        """Record that ``page`` (same url and observed_at) was read again by a newer parse."""

    def prune(self, older_than: str) -> int:
        """Forget fetches observed before ``older_than`` and the bodies only they needed;
        returns how many fetches were forgotten."""

    def close(self) -> None: ...
