"""The page archive read back by anyone: ``python -m runner archive export|show|list`` as real
processes, on data dirs real ``scrapy crawl trending`` runs wrote against the fake GitHub
serving fresh request ids, nonces and CSRF tokens on every answer; damage and bombs skipped
with one line each, in bounded memory; a kill never leaves a record without its body."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import zstandard
from warcio.archiveiterator import ArchiveIterator

from scraper.trending.archive import ArchivedPage, FilesystemPageArchive, body_sha256
from scraper.utils.layout import DataLayout
from scraper.utils.stamps import ms_stamp, stamp_ms
from tests.support.archivewriter import PAGE, URL, page_at
from tests.support.collector import Collector
from tests.support.paths import REPO_ROOT

LISTS = {"languages": ["", "python"], "periods": ["daily"], "spoken_languages": [""]}
GENERATIONS = (0, 0, 1)  # the second round serves the same rows, the third others


def _collect(collector: Collector, github: Any) -> dict[str, list[str]]:
    """Three rounds of ``scrapy crawl trending``; the sha256 of every body served, per URL
    path and query, in the order served."""
    github.control(fresh_values=True, reset_stats=True)
    for generation in GENERATIONS:
        collector.configure(github=github, spiders={"trending": LISTS})
        github.control(generation=generation)
        result = collector.crawl("trending", timeout=90)
        assert result.returncode == 0, result.stderr[-3000:]
    served = defaultdict(list)
    for request in github.stats()["requests"]:
        if request["path"].startswith("/trending"):
            served[f"{request['path']}?{request['query']}"].append(request["body_sha256"])
    return served


def _warc(path: Path) -> list[Any]:
    with open(path, "rb") as handle:
        return [(record.rec_type, record.rec_headers, record.http_headers,
                 record.content_stream().read()) for record in ArchiveIterator(handle)]


@pytest.mark.timeout(300)
def test_export_show_and_list_give_back_every_page_as_served(tmp_path: Path,
                                                             fake_github: Any) -> None:
    collector = Collector(tmp_path / "home")
    served = _collect(collector, fake_github)
    web = fake_github.url("web")
    assert len(served) == 2 and all(len(set(shas)) == 3 for shas in served.values())

    listed = collector.runner_measured("archive", "list")
    assert listed.returncode == 0, listed.stderr
    lines = [line.split("\t") for line in listed.stdout.decode().splitlines()]
    assert len(lines) == 6
    for at, url, status, rows, sha in lines:
        assert url.startswith(web) and status == "200" and int(rows) >= 20
        assert sha in served[url.removeprefix(web)]
        assert stamp_ms(at) > 0
    # The URL as listed; the last fetch by default, an earlier one --at its time.
    at, url = lines[0][0], lines[0][1]
    shown = collector.runner_measured("archive", "show", url)
    assert shown.returncode == 0, shown.stderr
    assert hashlib.sha256(shown.stdout).hexdigest() == served[url.removeprefix(web)][-1]
    first = collector.runner_measured("archive", "show", url, "--at", at)
    assert hashlib.sha256(first.stdout).hexdigest() == served[url.removeprefix(web)][0]
    missing = collector.runner_measured("archive", "show", f"{web}/trending/rust?since=daily")
    assert missing.returncode == 1 and missing.stdout == b""
    assert missing.stderr.count("\n") == 1 and "no fetch of" in missing.stderr

    out = tmp_path / "trending.warc.gz"
    exported = collector.runner_measured("archive", "export", "--format", "warc", "--out",
                                         str(out))
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.decode() == f"archive export: 6 fetches -> {out}\n"
    records = _warc(out)
    assert [r[0] for r in records] == ["warcinfo"] + ["response", "metadata"] * 6
    assert records[0][1].protocol == "WARC/1.1"
    for (_, head, http, body), (_, meta_head, _, meta), line in zip(
            records[1::2], records[2::2], lines, strict=True):
        assert head.get_header("WARC-Target-URI") == line[1]
        assert head.get_header("WARC-Date") == line[0]
        assert hashlib.sha256(body).hexdigest() == line[4]
        assert http.get_statuscode() == "200"
        assert http.get_header("Content-Type") == "text/html; charset=utf-8"
        assert meta_head.get_header("WARC-Concurrent-To") == head.get_header("WARC-Record-ID")
        fields = dict(f.split(": ", 1) for f in meta.decode().splitlines())
        assert fields["rows"] == line[3] and fields["drift"] == "no"
        assert fields["parser-version"] and fields["list"].startswith("daily|")

    # One list, and from a time on.
    python_only = tmp_path / "python.warc.gz"
    assert collector.runner_measured("archive", "export", "--format", "warc", "--out",
                                     str(python_only), "--list", "daily-python",
                                     "--since", lines[2][0]).returncode == 0
    responses = [r for r in _warc(python_only) if r[0] == "response"]
    assert [r[1].get_header("WARC-Target-URI") for r in responses] == \
        [f"{web}/trending/python?since=daily"] * 2
    unknown = collector.runner_measured("archive", "list", "--list", "daily-rust")
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1
    assert "daily-all, daily-python" in unknown.stderr


def _damage(db: Path) -> tuple[list[int], list[int]]:
    """Two frames no other frame is built on (so each touches one fetch) made garbage and a
    400 MB bomb; returns (those frames, every other fetch's frame)."""
    with sqlite3.connect(db) as conn:
        leaves = [row[0] for row in conn.execute(
            "SELECT id FROM frames f WHERE NOT EXISTS (SELECT 1 FROM frames g WHERE g.base = "
            "f.id) AND NOT EXISTS (SELECT 1 FROM heads h WHERE h.frame = f.id) ORDER BY id")]
        garbage, bombed = leaves[:2]
        compressor = zstandard.ZstdCompressor(level=1).compressobj()
        zeros = bytes(1 << 20)
        bomb = b"".join([*(compressor.compress(zeros) for _ in range(400)), compressor.flush()])
        conn.execute("UPDATE frames SET frame = ? WHERE id = ?", (b"\x28\xb5\x2f\xfd" * 9,
                                                                  garbage))
        conn.execute("UPDATE frames SET frame = ? WHERE id = ?", (bomb, bombed))
        others = [row[0] for row in conn.execute(
            "SELECT frame FROM served WHERE frame NOT IN (?, ?)", (garbage, bombed))]
    return [garbage, bombed], others


@pytest.mark.timeout(300)
def test_a_corrupt_or_bombed_body_is_skipped_with_one_line_in_bounded_memory(
        tmp_path: Path, fake_github: Any) -> None:
    collector = Collector(tmp_path / "home")
    _collect(collector, fake_github)
    db = DataLayout(collector.data_dir).archive_db("trending")
    damaged, _ = _damage(db)
    with sqlite3.connect(db) as conn:
        named = {row[0]: (row[1], ms_stamp(row[2])) for row in conn.execute(
            "SELECT s.frame, u.url, s.observed FROM served s JOIN urls u ON u.id = s.url")}

    out = tmp_path / "all.warc.gz"
    exported = collector.runner_measured("archive", "export", "--format", "warc", "--out",
                                         str(out))
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.decode() == f"archive export: 4 fetches -> {out}\n"
    for result in (exported, collector.runner_measured("reparse", "--spider", "trending")):
        lines = result.stderr.splitlines()
        assert len(lines) == 2, result.stderr
        for frame, line in zip(damaged, lines, strict=True):
            url, at = named[frame]
            assert f"skipped archived page {url} fetched {at}: " in line
        assert "does not decompress" in lines[0]
        assert "decompresses past 16,777,216 bytes" in lines[1]
        # A 400 MB bomb: the process never holds more than TRENDING_MAX_BYTES of it.
        assert result.peak_mb < 300, result.peak_mb
    assert len([r for r in _warc(out) if r[0] == "response"]) == 4
    url, at = named[damaged[1]]
    shown = collector.runner_measured("archive", "show", url, "--at", at)
    assert shown.returncode == 1 and shown.stdout == b"" and shown.peak_mb < 300
    assert shown.stderr.count("\n") == 1 and "decompresses past" in shown.stderr


def _archive(data_dir: Path, count: int) -> None:
    archive = FilesystemPageArchive.at(DataLayout(data_dir), "trending")
    rng, page = random.Random(count), PAGE.read_bytes()
    try:
        for n in range(count):
            body = page_at(n, rng, page)
            archive.put(ArchivedPage(URL, ms_stamp(1_796_083_200_000 + n * 60_000), 200,
                                     body_sha256(body), "daily|python|", "1"), body)
    finally:
        archive.close()


@pytest.mark.timeout(300)
def test_the_export_streams_memory_does_not_grow_with_the_archive(tmp_path: Path) -> None:
    peaks = {}
    for count in (40, 400):
        collector = Collector(tmp_path / f"home-{count}")
        collector.configure()
        _archive(collector.data_dir, count)
        out = tmp_path / f"{count}.warc.gz"
        result = collector.runner_measured("archive", "export", "--format", "warc", "--out",
                                           str(out))
        assert result.returncode == 0, result.stderr
        assert sum(1 for r in _warc(out) if r[0] == "response") == count
        peaks[count] = result.peak_mb
    # 360 pages more are 240 MB of bodies; the export holds one, and the bases it decoded.
    assert peaks[400] < peaks[40] + 40, peaks


@pytest.mark.timeout(300)
def test_a_kill_never_leaves_a_record_without_its_body(tmp_path: Path) -> None:
    rng = random.Random(40)
    data_dir = tmp_path / "data"
    for kill in range(8):
        writer = subprocess.Popen([sys.executable, "-m", "tests.support.archivewriter",
                                   str(data_dir), str(kill)], cwd=REPO_ROOT,
                                  stdout=subprocess.PIPE, text=True)
        assert writer.stdout is not None
        wanted = rng.randint(1, 12)
        for _ in range(wanted):
            assert writer.stdout.readline().startswith("put ")
        time.sleep(rng.uniform(0, 0.02))  # mid-put, most of the time
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
    db = DataLayout(data_dir).archive_db("trending")
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    archive = FilesystemPageArchive.at(DataLayout(data_dir), "trending")
    try:
        pages = list(archive.pages())
        assert len(pages) >= 8
        for page in pages:
            assert body_sha256(archive.body(page)) == page.sha256
    finally:
        archive.close()
