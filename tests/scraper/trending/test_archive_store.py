"""The page archive's store (scraper/trending/archive.py): every fetch back byte for byte
through chains of zstd frames, keyframes and pruning; archives of the earlier gzip-template
form read as before; a damaged or bombed body refused in one line, the others read."""

from __future__ import annotations

import dataclasses
import random
import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard

from scraper.trending.archive import (
    MAX_DEPTH,
    ArchivedPage,
    FilesystemPageArchive,
    ParseProfile,
    UnreadableBody,
    body_sha256,
)
from scraper.trending.gzipform import template_path
from scraper.utils.layout import DataLayout
from scraper.utils.stamps import ms_stamp, stamp_ms
from tests.support.archivewriter import PAGE, URL, page_at
from tests.support.gziparchive import GzipTemplateArchive, split_volatile

KEY = "daily|python|"
START = stamp_ms("2026-12-01T00:00:00.000Z")
LIMIT = 16 * 1024 * 1024


def fetch(n: int, body: bytes, url: str = URL, key: str = KEY) -> ArchivedPage:
    return ArchivedPage(url, ms_stamp(START + n * 60_000), 200, body_sha256(body), key, "1",
                        profile=ParseProfile(rows=20, rows_hash=f"{n // 4:064x}"),
                        headers=(("Content-Type", "text/html; charset=utf-8"),))


def fill(archive: FilesystemPageArchive | GzipTemplateArchive, count: int,
         seed: int = 40) -> list[tuple[ArchivedPage, bytes]]:
    rng, page = random.Random(seed), PAGE.read_bytes()
    fetches = []
    for n in range(count):
        body = page_at(n, rng, page)
        fetches.append((fetch(n, body), body))
        archive.put(*fetches[-1])
    return fetches


def records(tmp_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(DataLayout(tmp_path).archive_db("trending"))


@pytest.fixture
def archive(tmp_path: Path) -> Iterator[FilesystemPageArchive]:
    store = FilesystemPageArchive.at(DataLayout(tmp_path), "trending")
    yield store
    store.close()


def test_every_fetch_comes_back_byte_for_byte_through_chains_and_pruning(
        archive: FilesystemPageArchive, tmp_path: Path) -> None:
    # 4 × MAX_DEPTH + 20 fetches: the list's head moves on every fourth, so its chain of
    # frames reaches MAX_DEPTH and starts again from a frame that stands alone.
    fetches = fill(archive, 4 * MAX_DEPTH + 20)
    reopened = FilesystemPageArchive.at(DataLayout(tmp_path), "trending")
    try:
        assert [reopened.body(page) for page, _ in fetches] == [body for _, body in fetches]
        assert [p.observed_at for p in reopened.pages()] == [p.observed_at for p, _ in fetches]
        assert reopened.latest(URL) == fetches[-1][0]
        assert reopened.latest(URL, fetches[10][0].observed_at) == fetches[10][0]
        assert reopened.latest(URL, "2026-11-30") is None
    finally:
        reopened.close()
    with records(tmp_path) as conn:
        standing_alone = conn.execute("SELECT count(*) FROM frames WHERE base IS NULL")
        assert standing_alone.fetchone()[0] == 2
        stored = conn.execute("SELECT sum(length(frame)) FROM frames").fetchone()[0]
    # 148 pages of 674 KB in about 3 KB each (the new text every fourth fetch included).
    assert stored < len(fetches) * 4_000

    cut = fetches[100][0].observed_at
    assert archive.prune(cut) == 100
    assert [archive.body(page) for page, _ in fetches[100:]] == [b for _, b in fetches[100:]]
    with pytest.raises(UnreadableBody, match="no such fetch"):
        archive.body(fetches[99][0])
    with records(tmp_path) as conn:
        kept = conn.execute("SELECT count(*) FROM frames").fetchone()[0]
    # Only the frames the kept fetches are built on stay: fewer than one chain's worth.
    assert len(fetches) - 100 < kept < len(fetches) - 100 + MAX_DEPTH
    assert archive.prune("2027-01-01") == len(fetches) - 100
    with records(tmp_path) as conn:
        assert conn.execute("SELECT count(*) FROM frames").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM heads").fetchone()[0] == 0


def test_a_fetch_keeps_its_headers_and_lists_stay_apart(archive: FilesystemPageArchive) -> None:
    page = PAGE.read_bytes()
    weekly = fetch(1, page, url=URL.replace("daily", "weekly"), key="weekly|python|")
    archive.put(fetch(0, page), page)
    archive.put(weekly, page)
    assert list(archive.pages(lists=["weekly|python|"])) == [weekly]
    assert archive.list_keys() == [KEY, "weekly|python|"]
    assert weekly.headers == (("Content-Type", "text/html; charset=utf-8"),)
    assert [p.observed_at for p in archive.pages(until=weekly.observed_at)] == \
        [fetch(0, page).observed_at]


def test_an_archive_of_the_earlier_form_reads_as_before_and_grows_in_the_new_one(
        tmp_path: Path) -> None:
    layout = DataLayout(tmp_path)
    earlier = GzipTemplateArchive(layout.archive_dir("trending"), layout.archive_db("trending"))
    old = fill(earlier, 8)
    earlier.close()
    # The new text every fourth fetch: two distinct pages, a template each.
    templates = [template_path(layout.archive_dir("trending"),
                               body_sha256(split_volatile(body)[0])) for _, body in old[::4]]
    assert sorted(layout.archive_dir("trending").rglob("*.gz")) == sorted(templates)

    archive = FilesystemPageArchive.at(layout, "trending")
    try:
        assert [archive.body(page) for page, _ in old] == [body for _, body in old]
        assert [p.observed_at for p in archive.pages()] == [p.observed_at for p, _ in old]
        # The earlier records kept no headers; everything else is as recorded.
        assert list(archive.pages()) == [
            ArchivedPage(p.url, p.observed_at, p.status, p.sha256, p.list_key, p.parser_version,
                         p.profile) for p, _ in old]
        rng, page = random.Random(41), PAGE.read_bytes()
        new = [(fetch(n, body), body) for n in range(8, 12)
               for body in [page_at(n, rng, page)]]
        for pair in new:
            archive.put(*pair)
        assert sorted(layout.archive_dir("trending").rglob("*.gz")) == sorted(templates)
        assert [archive.body(page) for page, _ in old + new] == [b for _, b in old + new]
        archive.reparsed(dataclasses.replace(old[0][0], profile=ParseProfile(rows=25)))
        assert next(archive.pages()).profile == ParseProfile(rows=25)
        assert archive.prune(old[4][0].observed_at) == 4
        assert list(layout.archive_dir("trending").rglob("*.gz")) == templates[1:]
        assert archive.prune(new[0][0].observed_at) == 4
        assert not list(layout.archive_dir("trending").rglob("*.gz"))
        assert [archive.body(page) for page, _ in new] == [b for _, b in new]
    finally:
        archive.close()
    with records(tmp_path) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert "fetches" not in tables  # its records moved, once


def _bomb(size: int) -> bytes:
    """A zstd frame of ``size`` zero bytes, made without holding them."""
    compressor = zstandard.ZstdCompressor(level=1).compressobj()
    chunk = bytes(1 << 20)
    return b"".join([*(compressor.compress(chunk) for _ in range(size >> 20)),
                     compressor.flush()])


def _gzip_bomb(size: int) -> bytes:
    compressor = zlib.compressobj(1, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    chunk = bytes(1 << 20)
    return b"".join([*(compressor.compress(chunk) for _ in range(size >> 20)),
                     compressor.flush()])


def _leaves(conn: sqlite3.Connection) -> list[int]:
    """Frames no other is built on and no head is: damage there touches one fetch."""
    return [row[0] for row in conn.execute(
        "SELECT id FROM frames f WHERE NOT EXISTS (SELECT 1 FROM frames g WHERE g.base = f.id) "
        "AND NOT EXISTS (SELECT 1 FROM heads h WHERE h.frame = f.id) ORDER BY id")]


def test_a_damaged_or_bombed_body_is_refused_in_one_line_and_the_others_read(
        tmp_path: Path) -> None:
    layout = DataLayout(tmp_path)
    earlier = GzipTemplateArchive(layout.archive_dir("trending"), layout.archive_db("trending"))
    old = fill(earlier, 4)  # one template
    earlier.close()
    archive = FilesystemPageArchive.at(layout, "trending", max_bytes=LIMIT)
    try:
        rng, page = random.Random(42), PAGE.read_bytes()
        new = [(fetch(n, body), body) for n in range(4, 12) for body in [page_at(n, rng, page)]]
        for pair in new:
            archive.put(*pair)
        with records(tmp_path) as conn:
            garbage, bombed, *_ = _leaves(conn)
            conn.execute("UPDATE frames SET frame = ? WHERE id = ?", (b"\x28\xb5\x2f\xfd" * 9,
                                                                      garbage))
            conn.execute("UPDATE frames SET frame = ? WHERE id = ?", (_bomb(64 << 20), bombed))
            conn.execute("UPDATE served SET sha256 = ? WHERE frame = ?",
                         (bytes(32), max(_leaves(conn))))
        template = template_path(layout.archive_dir("trending"),
                                 records(tmp_path).execute(
                                     "SELECT template FROM templates").fetchone()[0])
        template.write_bytes(_gzip_bomb(64 << 20))

        served = {page_.observed_at: body for page_, body in old + new}
        why = {}
        for page_ in archive.pages():  # as recorded: one sha256 is now wrong
            try:
                assert archive.body(page_) == served[page_.observed_at]
            except UnreadableBody as exc:
                why[page_.observed_at] = str(exc)
        lines = list(why.values())
        assert all("\n" not in line and URL in line for line in lines)
        assert all(at in line for at, line in why.items())
        assert sum(f"decompresses past {LIMIT:,} bytes" in line for line in lines) == 4 + 1
        assert sum("does not decompress" in line for line in lines) == 1
        assert sum("does not match its sha256" in line for line in lines) == 1
        assert len(why) == 7
    finally:
        archive.close()
