"""The page archive: every fetched listing page kept as it was served, for re-parsing later.

A page body is stored once however often it is fetched: compressed (gzip), named by the
sha256 of its *template*. GitHub never serves the same bytes twice (each page carries a request
id, nonces, CSRF tokens), so the token-like attribute values (:data:`VOLATILE_RE`) are cut out
into a list: the template is the page with a NUL where each value was, stored once with the
values of its first fetch; a fetch records only the values that differ from those (a few
hundred bytes), and the body is put back together byte for byte (its sha256 as served is
recorded and checked). Each fetch is a small record (URL, the list it is, when, HTTP status,
the body's sha256, the parser version that read it and what that parse found), so an unchanged
page costs a record, not a page. The store is chosen by ``TRENDING_ARCHIVE_STORAGE``, like the
other stores (:mod:`scraper.stores.base`: the ``PageArchiveStorage`` protocol, built with
Scrapy's ``build_from_crawler``, as Scrapy builds ``HTTPCACHE_STORAGE``); the default keeps bodies
under ``{data_dir}/archive/{spider}/`` and records in ``{data_dir}/state/archive/{spider}.sqlite``.

Crash safety: a body is written to a temporary name, fsynced and renamed before the record
that names it is committed, so a record never points at a missing or torn body; a kill
between the two leaves an unreferenced body, which the next ``put`` of that page reuses.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from scrapy.crawler import Crawler

from scraper.stores.base import AlwaysUp, Outage
from scraper.stores.sqlite import open_store, transaction
from scraper.utils.layout import DataLayout
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


def body_sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


VOLATILE_RE = re.compile(
    rb'(?<=")(?=[^"]*\d)(?=[^"]*[A-Za-z])(?![^"]*//)[A-Za-z0-9+/=_:-]{16,}(?=")')
"""Quoted attribute values that look like tokens (16+ characters of base64, hex or ids, with a
digit and a letter, not a URL): request ids, nonces, CSRF tokens, but also stable hashes,
which then cost nothing since only values that differ from the template's are recorded."""
_HOLE = b"\x00"


def split_volatile(body: bytes) -> tuple[bytes, list[str]]:
    """(template, values): ``join_volatile`` of them is ``body`` again, byte for byte."""
    if _HOLE in body:
        return body, []  # no room for holes: kept whole
    values = [v.decode("ascii") for v in VOLATILE_RE.findall(body)]
    return VOLATILE_RE.sub(_HOLE, body), values


def join_volatile(template: bytes, values: list[str]) -> bytes:
    if not values:
        return template
    pieces = template.split(_HOLE)
    out = [pieces[0]]
    for value, piece in zip(values, pieces[1:], strict=True):
        out += [value.encode("ascii"), piece]
    return b"".join(out)


class FilesystemPageArchive(AlwaysUp):
    """Bodies as ``{sha256[:2]}/{sha256}.gz`` files, fetch records in one SQLite store; a
    :class:`~scraper.trending.archive.PageArchiveStorage`, built by ``build_from_crawler``."""

    KIND = "page-archive"
    VERSION = 1
    SCHEMA = """
    CREATE TABLE IF NOT EXISTS templates (
      template TEXT PRIMARY KEY, base_values BLOB NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS fetches (
      url TEXT NOT NULL, observed_at TEXT NOT NULL, status INTEGER NOT NULL,
      sha256 TEXT NOT NULL, template TEXT NOT NULL, changes BLOB, list_key TEXT NOT NULL,
      parser_version TEXT NOT NULL,
      rows INTEGER NOT NULL, with_language INTEGER NOT NULL, with_stars INTEGER NOT NULL,
      with_description INTEGER NOT NULL, rows_hash TEXT NOT NULL, drifted INTEGER NOT NULL,
      PRIMARY KEY (url, observed_at)) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS fetches_by_list ON fetches (list_key, observed_at);
    CREATE INDEX IF NOT EXISTS fetches_by_time ON fetches (observed_at);
    CREATE INDEX IF NOT EXISTS fetches_by_template ON fetches (template);
    """

    def __init__(self, bodies: Path, records: Path) -> None:
        self.bodies = bodies
        private_dirs(records.parent)
        self._conn = open_store(records, self.KIND, self.VERSION, self.SCHEMA)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FilesystemPageArchive:
        layout = DataLayout.from_settings(crawler.settings)
        assert crawler.spidercls is not None
        return cls.at(layout, crawler.spidercls.name)

    @classmethod
    def at(cls, layout: DataLayout, spider: str) -> FilesystemPageArchive:
        return cls(layout.archive_dir(spider), layout.archive_db(spider))

    def _path(self, sha256: str) -> Path:
        return self.bodies / sha256[:2] / f"{sha256}.gz"

    def put(self, page: ArchivedPage, body: bytes) -> None:
        template, values = split_volatile(body)
        name = body_sha256(template)
        path = self._path(name)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            # mtime 0: the same template compresses to the same bytes on every box.
            data = gzip.compress(template, compresslevel=6, mtime=0)
            with open(temporary, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
        with transaction(self._conn):
            self._conn.execute("INSERT OR IGNORE INTO templates VALUES (?, ?)",
                               (name, zlib.compress(json.dumps(values).encode())))
            base = json.loads(zlib.decompress(self._conn.execute(
                "SELECT base_values FROM templates WHERE template = ?", (name,)).fetchone()[0]))
            changed = {i: v for i, (v, b) in enumerate(zip(values, base, strict=True)) if v != b}
            changes = zlib.compress(json.dumps(changed).encode()) if changed else None
            self._insert(page, name, changes)

    def _insert(self, page: ArchivedPage, template: str, changes: bytes | None) -> None:
        profile = page.profile
        self._conn.execute(
            "INSERT OR REPLACE INTO fetches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (page.url, page.observed_at, page.status, page.sha256, template, changes,
             page.list_key,
             page.parser_version, profile.rows, profile.with_language, profile.with_stars,
             profile.with_description, profile.rows_hash, int(page.drifted)))

    def body(self, page: ArchivedPage) -> bytes:
        template, changes, base = self._conn.execute(
            "SELECT f.template, f.changes, t.base_values FROM fetches f JOIN templates t "
            "ON t.template = f.template WHERE f.url = ? AND f.observed_at = ?",
            (page.url, page.observed_at)).fetchone()
        values = json.loads(zlib.decompress(base))
        for i, value in json.loads(zlib.decompress(changes)).items() if changes else ():
            values[int(i)] = value
        body = join_volatile(gzip.decompress(self._path(template).read_bytes()), values)
        if body_sha256(body) != page.sha256:
            raise ValueError(f"archived page {page.url} at {page.observed_at} does not match "
                             f"its sha256 {page.sha256}")
        return body

    def _select(self, where: str, params: tuple[object, ...]) -> Iterator[ArchivedPage]:
        for row in self._conn.execute(
                "SELECT url, observed_at, status, sha256, list_key, parser_version, rows, "
                "with_language, with_stars, with_description, rows_hash, drifted "
                f"FROM fetches {where}", params):
            url, observed_at, status, sha256, list_key, parser_version = row[:6]
            yield ArchivedPage(url, observed_at, status, sha256, list_key, parser_version,
                               profile=ParseProfile(*row[6:11]), drifted=bool(row[11]))

    def pages(self, since: str | None = None) -> Iterator[ArchivedPage]:
        # A list, not a cursor held open: the caller writes to the store while it walks.
        return iter(list(self._select("WHERE observed_at >= ? ORDER BY observed_at, url",
                                      (since or "",))))

    def recent(self, list_key: str, limit: int, before: str) -> list[ArchivedPage]:
        return list(self._select(
            "WHERE list_key = ? AND observed_at < ? AND NOT drifted "
            "ORDER BY observed_at DESC LIMIT ?",
            (list_key, before, limit)))

    def reparsed(self, page: ArchivedPage) -> None:
        profile = page.profile
        self._conn.execute(
            "UPDATE fetches SET parser_version = ?, rows = ?, with_language = ?, "
            "with_stars = ?, with_description = ?, rows_hash = ?, drifted = ? "
            "WHERE url = ? AND observed_at = ?",
            (page.parser_version, profile.rows, profile.with_language, profile.with_stars,
             profile.with_description, profile.rows_hash, int(page.drifted), page.url,
             page.observed_at))

    def prune(self, older_than: str) -> int:
        with transaction(self._conn):
            gone = [row[0] for row in self._conn.execute(
                "SELECT DISTINCT template FROM fetches WHERE observed_at < ?", (older_than,))]
            count = self._conn.execute("DELETE FROM fetches WHERE observed_at < ?",
                                       (older_than,)).rowcount
            unreferenced = [sha for sha in gone if self._conn.execute(
                "SELECT 1 FROM fetches WHERE template = ? LIMIT 1", (sha,)).fetchone() is None]
            self._conn.executemany("DELETE FROM templates WHERE template = ?",
                                   [(sha,) for sha in unreferenced])
        # After the commit: a kill here leaves bodies nothing names, never a record without one.
        for sha in unreferenced:
            self._path(sha).unlink(missing_ok=True)
        return count

    def close(self) -> None:
        self._conn.close()


def retention_cutoff(seconds: float | None, now: float | None = None) -> str | None:
    """The ``observed_at`` before which fetches are pruned, or None: kept forever."""
    if seconds is None:
        return None
    then = (time.time() if now is None else now) - seconds
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(then))


@runtime_checkable
class PageArchiveStorage(Outage, Protocol):
    """The page archive (:mod:`scraper.trending.archive`): every fetched trending page as served,
    for ``python -m runner reparse``. Local to the box that fetched the page, in the
    distributed mode too, so always up."""

    def put(self, page: ArchivedPage, body: bytes) -> None:
        """Keep ``body`` (once per sha256) and record the fetch."""

    def body(self, page: ArchivedPage) -> bytes:
        """The page's body as it was served."""

    def pages(self, since: str | None = None) -> Iterator[ArchivedPage]:
        """Every recorded fetch (observed at or after ``since``), oldest first."""

    def recent(self, list_key: str, limit: int, before: str) -> list[ArchivedPage]:
        """The list's last ``limit`` fetches observed before ``before`` that were not drifted,
        newest first: a markup change stays drift until the parser reads it again."""

    def reparsed(self, page: ArchivedPage) -> None:
        """Record that ``page`` (same url and observed_at) was read again by a newer parse."""

    def prune(self, older_than: str) -> int:
        """Forget fetches observed before ``older_than`` and the bodies only they named;
        returns how many fetches were forgotten."""

    def close(self) -> None: ...
