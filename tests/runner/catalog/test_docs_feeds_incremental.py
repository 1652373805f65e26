"""The docs feeds keep their place: a build after one round redoes only the pages it loaded,
and every feed is byte for byte what a build of the same item files from nothing writes."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml

from runner.catalog import docsfeeds
from runner.catalog.build import build_catalog
from scraper.config.collector import CollectorConfig, parse_config
from scraper.utils.layout import DataLayout
from tests.support.paths import REPO_ROOT

SITE_A = "https://docs.a.example/"
SITE_B = "https://docs.b.example/en/"
PAGES_A = [f"{SITE_A}p{k}.html" for k in range(30)]
PAGES_B = [f"{SITE_B}p{k}.html" for k in range(4)]


def _stamp(hour: int, minute: int = 0) -> str:
    return f"2027-01-{1 + hour // 24:02d}T{hour % 24:02d}:{minute:02d}:00Z"


def _item(url: str, version: int, at: str) -> dict[str, object]:
    body = "\n".join(f"line {n} of {url}" + (f" v{version}" if n % 3 == version % 3 else "")
                     for n in range(12))
    return {"spider": "docs", "shard": "0/1", "collected_at": at,
            "content_hash": hashlib.sha256(f"{url}{version}".encode()).hexdigest(),
            "url": url, "title": f"Page {url.rsplit('/', 1)[1]}",
            "markdown": f"# {url}\n\n{body}\n"}


def _round(data: Path, name: str, items: list[dict[str, object]]) -> None:
    directory = data / "items" / "docs"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"docs-0of1-{name}.jsonl").write_text(
        "".join(json.dumps(item) + "\n" for item in items))


def _config(data: Path) -> CollectorConfig:
    text = yaml.safe_dump({"data_dir": str(data),
                           "spiders": {"docs": {"start_urls": [SITE_A, SITE_B]}}})
    return parse_config(text, "collector.yaml")


def _feeds(data: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted((data / "feeds").glob("docs-*"))}


def _from_nothing(data: Path, scratch: Path) -> dict[str, bytes]:
    shutil.copytree(data / "items", scratch / "items")
    build_catalog(DataLayout(scratch), _config(scratch), warn=pytest.fail)
    return _feeds(scratch)


def test_a_build_after_a_round_redoes_only_its_pages_and_writes_what_a_full_build_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    # Three contents of every page: 60 changes on site A, more than a feed shows.
    for version in range(3):
        _round(data, f"2027010{version + 1}T000000Z",
               [_item(url, version, _stamp(24 * version, k))
                for k, url in enumerate(PAGES_A + PAGES_B)])
    build_catalog(DataLayout(data), _config(data), warn=pytest.fail)
    before = _feeds(data)
    assert len(before) == 2
    site_b = data / "feeds" / docsfeeds.feed_name(SITE_B)
    untouched = site_b.stat()

    diffed: list[str] = []
    rendered: list[str] = []
    diff_summary, render = docsfeeds.diff_summary, docsfeeds.render_docs_feed
    monkeypatch.setattr(docsfeeds, "diff_summary",
                        lambda old, new: diffed.append(new.split("\n", 1)[0][2:])
                        or diff_summary(old, new))
    monkeypatch.setattr(docsfeeds, "render_docs_feed",
                        lambda site, entries: rendered.append(site) or render(site, entries))
    changed = [PAGES_A[3], PAGES_A[17]]
    _round(data, "20270104T000000Z", [_item(url, 3, _stamp(72)) for url in changed])
    build_catalog(DataLayout(data), _config(data), warn=pytest.fail)
    assert sorted(diffed) == sorted(changed)  # one new entry each; the 48 kept are not diffed again
    assert rendered == [SITE_A]
    assert site_b.stat().st_ino == untouched.st_ino
    after = _feeds(data)
    assert after != before
    assert after == _from_nothing(data, tmp_path / "scratch")

    # A build that loads no docs file diffs and renders nothing.
    diffed.clear()
    rendered.clear()
    build_catalog(DataLayout(data), _config(data), warn=pytest.fail)
    assert diffed == rendered == []
    assert _feeds(data) == after


def test_an_older_content_loaded_late_gives_what_a_full_build_gives(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for version in range(3):
        _round(data, f"2027010{version + 1}T000000Z",
               [_item(url, version, _stamp(24 * version, k)) for k, url in enumerate(PAGES_A)])
    build_catalog(DataLayout(data), _config(data), warn=pytest.fail)
    # A file closed late (a .part recovered after a crash): page 5's newest content was
    # collected before the first, so a change shown in the full feed is a change no more, and
    # page 6 gets a content between its others.
    _round(data, "20261231T000000Z", [_item(PAGES_A[5], 2, "2026-12-31T00:00:00Z"),
                                      _item(PAGES_A[6], 7, _stamp(30))])
    build_catalog(DataLayout(data), _config(data), warn=pytest.fail)
    feed = _feeds(data)
    assert feed == _from_nothing(data, tmp_path / "scratch")
    assert f"{PAGES_A[6]}:".encode() in feed[docsfeeds.feed_name(SITE_A)]


def test_a_deleted_feed_is_written_again_and_a_catalog_without_the_record_rescans(
        tmp_path: Path) -> None:
    import sqlite3

    data = tmp_path / "data"
    for version in range(2):
        _round(data, f"2027010{version + 1}T000000Z",
               [_item(url, version, _stamp(24 * version)) for url in PAGES_B])
    build_catalog(DataLayout(data), _config(data), warn=pytest.fail)
    written = _feeds(data)
    (data / "feeds" / docsfeeds.feed_name(SITE_B)).unlink()
    build_catalog(DataLayout(data), _config(data), warn=pytest.fail)
    assert _feeds(data) == written
    # A catalog of an earlier version has none of the feeds' tables filled.
    conn = sqlite3.connect(data / "catalog.sqlite")
    conn.executescript("DELETE FROM docs_feed_entries; DELETE FROM docs_feed_state;")
    conn.close()
    (data / "feeds" / docsfeeds.feed_name(SITE_B)).unlink()
    build_catalog(DataLayout(data), _config(data), warn=pytest.fail)
    assert _feeds(data) == written


def test_the_catalog_build_imports_no_scrapy() -> None:
    """Every hourly build is a fresh process: importing Scrapy (and Twisted, lxml) tripled its
    start-up, for nothing it uses."""
    import subprocess
    import sys

    code = ("import sys, runner.cli.main, runner.catalog.build, runner.catalog.docsfeeds, "
            "runner.catalog.feeds, runner.core.budgetview, runner.core.growth; "
            "print(sorted(m for m in ('scrapy', 'twisted', 'parsel', 'difflib') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO_ROOT).stdout
    assert out.strip() == "[]"
