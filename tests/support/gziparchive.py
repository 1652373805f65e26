"""The page archive's earlier writer, as it wrote before fetches became zstd frames: a gzipped
template per distinct page (its token-like values cut out) and, per fetch, the values that
differ. Kept to make archives of that form, which the archive must go on reading
(``tests/scraper/trending/``), and as the baseline ``benchmarks/archive.py`` measures against."""

from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from pathlib import Path

from scraper.stores.sqlite import open_store, transaction
from scraper.trending.archive import ArchivedPage, body_sha256
from scraper.trending.gzipform import template_path
from scraper.utils.statefile import private_dirs

VOLATILE_RE = re.compile(
    rb'(?<=")(?=[^"]*\d)(?=[^"]*[A-Za-z])(?![^"]*//)[A-Za-z0-9+/=_:-]{16,}(?=")')
"""Quoted attribute values that look like tokens (16+ characters of base64, hex or ids, with a
digit and a letter, not a URL): request ids, nonces, CSRF tokens, and stable hashes."""
_HOLE = b"\x00"

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


def split_volatile(body: bytes) -> tuple[bytes, list[str]]:
    """(template, values): the page with a NUL where each token-like value was."""
    if _HOLE in body:
        return body, []  # no room for holes: kept whole
    values = [v.decode("ascii") for v in VOLATILE_RE.findall(body)]
    return VOLATILE_RE.sub(_HOLE, body), values


class GzipTemplateArchive:
    """Writes the earlier form into ``records`` (the same store kind and version) and
    ``bodies``."""

    def __init__(self, bodies: Path, records: Path) -> None:
        self.bodies = bodies
        private_dirs(records.parent)
        self._conn = open_store(records, "page-archive", 1, SCHEMA)

    def put(self, page: ArchivedPage, body: bytes) -> None:
        template, values = split_volatile(body)
        name = body_sha256(template)
        path = template_path(self.bodies, name)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            with open(temporary, "wb") as handle:
                handle.write(gzip.compress(template, compresslevel=6, mtime=0))
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
            profile = page.profile
            self._conn.execute(
                "INSERT OR REPLACE INTO fetches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (page.url, page.observed_at, page.status, page.sha256, name, changes,
                 page.list_key, page.parser_version, profile.rows, profile.with_language,
                 profile.with_stars, profile.with_description, profile.rows_hash,
                 int(page.drifted)))

    def close(self) -> None:
        self._conn.close()
