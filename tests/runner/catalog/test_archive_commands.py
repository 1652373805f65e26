"""``python -m runner archive`` in process: the WARC records as warcio reads them, the lists
named as their feeds are, and every mistake one line."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from runner.catalog.pagearchive import at_time, list_name
from runner.catalog.warc import payload_digest, write_warc
from runner.cli.main import main
from scraper.trending.archive import (
    ArchivedPage,
    FilesystemPageArchive,
    ParseProfile,
    UnreadableBody,
    body_sha256,
)
from scraper.trending.memoryarchive import MemoryPageArchive
from scraper.utils.layout import DataLayout
from tests.support.archivewriter import PAGE, URL, page_at


def test_lists_are_named_as_their_feeds_are() -> None:
    assert list_name("daily||") == "daily-all"
    assert list_name("weekly|python|zh") == "weekly-python-zh"
    assert list_name("developers:monthly|rust") == "developers-monthly-rust"


def test_at_a_date_is_the_end_of_that_day() -> None:
    assert at_time("2026-12-01") == "2026-12-01T23:59:59.999"
    assert at_time("2026-12-01T10:00:00Z") == "2026-12-01T10:00:00"


@pytest.mark.parametrize("kind", ["filesystem", "memory"])
def test_each_fetch_is_a_response_and_a_metadata_record_warcio_reads(
        kind: str, tmp_path: Path) -> None:
    archive = (FilesystemPageArchive.at(DataLayout(tmp_path), "trending")
               if kind == "filesystem" else MemoryPageArchive({}))
    rng, page = random.Random(5), PAGE.read_bytes()
    served = []
    try:
        for n in range(3):
            body = page_at(n, rng, page)
            fetch = ArchivedPage(URL, f"2026-12-01T0{n}:00:00.250Z", 200, body_sha256(body),
                                 "daily|python|", "7", ParseProfile(20, 19, 20, 18, "ab" * 32),
                                 drifted=n == 2, headers=(("Content-Type", "text/html"),))
            archive.put(fetch, body)
            served.append((fetch, body))
        missing = ArchivedPage(URL, "2026-12-02T00:00:00.000Z", 200, "00" * 32,
                               "daily|python|", "7")
        out, skipped = io.BytesIO(), []
        pages = [fetch for fetch, _ in served] + [missing]
        assert write_warc(archive, pages, out, "t.warc.gz", skipped.append) == 3
    finally:
        archive.close()
    assert len(skipped) == 1 and "2026-12-02T00:00:00.000Z" in skipped[0]
    out.seek(0)
    # A record's content is read before the iterator moves on (the stream is shared).
    records = [(r.rec_type, r.rec_headers, r.http_headers, r.content_stream().read())
               for r in ArchiveIterator(out)]
    assert records[0][0] == "warcinfo"
    pairs = list(zip(records[1::2], records[2::2], strict=True))
    assert len(pairs) == 3
    for (response, metadata), (fetch, body) in zip(pairs, served, strict=True):
        assert response[0] == "response" and metadata[0] == "metadata"
        assert response[1].get_header("WARC-Date") == fetch.observed_at
        assert response[1].get_header("WARC-Payload-Digest") == payload_digest(fetch.sha256)
        assert response[2].get_header("Content-Length") == str(len(body))
        assert response[3] == body
        assert metadata[1].get_header("Content-Type") == "application/warc-fields"
        fields = metadata[3].decode()
        assert "parser-version: 7\r\n" in fields and "rows: 20\r\n" in fields
        assert f"drift: {'yes' if fetch.drifted else 'no'}\r\n" in fields


def test_a_missing_fetch_is_unreadable_in_every_archive(tmp_path: Path) -> None:
    page = ArchivedPage(URL, "2026-12-01T00:00:00.000Z", 200, "00" * 32, "daily|python|", "1")
    for archive in (FilesystemPageArchive.at(DataLayout(tmp_path), "trending"),
                    MemoryPageArchive({})):
        with pytest.raises(UnreadableBody, match="no such fetch"):
            archive.body(page)
        assert archive.latest(URL) is None
        archive.close()


@pytest.mark.parametrize("argv, says", [
    (["archive"], "required"),
    (["archive", "export", "--out", "x"], "--format"),
    (["archive", "export", "--format", "zip", "--out", "x"], "invalid choice"),
    (["archive", "show", URL, "--at", "yesterday"], "is not a date"),
    (["archive", "list", "--sinse", "2026-12-01"], "unknown option --sinse for 'archive list'"),
    (["archive", "show"], "URL"),
])
def test_every_mistake_is_one_line_and_exit_2(argv: list[str], says: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
