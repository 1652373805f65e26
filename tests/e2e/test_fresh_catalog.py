"""Data reaches the catalog as it is written: ``--once`` then ``catalog`` holds the round, with
daily segments still open; a hand-run shard's and an old plan's segments are loaded and
closed; ``stop`` closes what it can. Real runner and crawls against the fakes."""

from __future__ import annotations

import gzip
import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support.collector import Collector, wait_for

DAILY = {"settings": {"ITEMSTORE_SEGMENT_SECONDS": 86400}}
"""Segments that stay open through the test (an hour boundary mid-test would close them)."""


TRENDING = {"languages": [""], "periods": ["daily"]}
SEARCH = {"queries": ["topic:web-scraping"], "per_page": 30}


def daily_collector(home: Path, github: Any, spiders: dict[str, dict[str, Any]],
                    **top: Any) -> Collector:
    """A collector of the fake GitHub whose spiders keep :data:`DAILY` segments."""
    collector = Collector(home)
    collector.configure(github=github, spiders={name: {**section, **DAILY}
                                                for name, section in spiders.items()}, **top)
    return collector


def lines_written(collector: Collector) -> int:
    """Whole lines in every item file, open or closed (a torn tail is not a line)."""
    total = 0
    for path in (collector.data_dir / "items").rglob("*.jsonl*"):
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") \
            else path.read_bytes()
        total += data.count(b"\n")
    return total


def catalog_rows(collector: Collector, sql: str) -> Any:
    conn = sqlite3.connect(collector.data_dir / "catalog.sqlite")
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def build(collector: Collector) -> str:
    result = collector.runner("catalog", timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def parts(collector: Collector) -> list[Path]:
    return sorted((collector.data_dir / "items").rglob("*.part"))


@pytest.mark.timeout(240)
@pytest.mark.parametrize("fake_docs", [{"sites": 1, "pages": 8}], indirect=True)
def test_once_then_catalog_holds_everything_the_round_wrote(
        tmp_path: Path, fake_github: Any, fake_docs: Any) -> None:
    collector = daily_collector(tmp_path / "home", fake_github, {
        "trending": TRENDING, "search": SEARCH,
        "docs": {"max_pages_per_site": 8, "start_urls": [f"{fake_docs.url()}/site0/"]}})
    once = collector.runner("--once", "--workers", "3", timeout=180)
    assert once.returncode == 0, once.stderr
    assert {p.parent.name for p in parts(collector)} == {"trending", "search", "docs"}
    written = lines_written(collector)
    assert "from open segments)" in build(collector)
    assert catalog_rows(collector, "SELECT sum(lines) FROM loaded_files") == written
    searched = {line["id"] for line in read_items(collector, "search")}
    assert catalog_rows(collector, "SELECT count(*) FROM repos") == len(searched) > 0
    pages = {line["url"] for line in read_items(collector, "docs")}
    assert catalog_rows(collector, "SELECT count(*) FROM docs_pages") == len(pages) > 0
    assert catalog_rows(collector, "SELECT count(*) FROM trending_fetches") > 0
    assert "catalog: 0 new files, 0 lines in" in build(collector)  # again: nothing added


def read_items(collector: Collector, spider: str) -> list[dict[str, Any]]:
    return [json.loads(line) for path in (collector.data_dir / "items" / spider).iterdir()
            for line in path.read_text().splitlines()]


@pytest.mark.timeout(240)
def test_a_hand_run_shard_and_an_old_plan_leave_no_segment_open_or_unloaded(
        tmp_path: Path, fake_github: Any) -> None:
    collector = daily_collector(tmp_path / "home", fake_github, {
        "trending": TRENDING, "search": {**SEARCH, "weight": 0}, "docs": {"weight": 0}})
    hand = collector.crawl("search", "0/4")  # a shard no runner plans
    assert hand.returncode == 0, hand.stderr
    (left,) = parts(collector)
    runner = collector.start_runner("--workers", "1")
    try:
        # Its start closes the hand-run shard's segment: no process holds it.
        wait_for(lambda: not left.exists(), 30, "the idle segment closed at start")
        wait_for(lambda: list((collector.data_dir / "items").glob("trending/*.part")), 60,
                 "a trending round")
        # The plan changes at a reload: trending's shard runs no more.
        collector.update_config({"spiders": {"trending": {"weight": 0},
                                             "search": {"weight": 1}}})
        runner.send_signal(signal.SIGHUP)
        wait_for(lambda: list((collector.data_dir / "items").glob("search/search-0of1-*")),
                 60, "a search round of the new plan")
        # The old plan's segment, open within its day, is loaded as it is.
        (old,) = (collector.data_dir / "items").glob("trending/*.part")
        build(collector)
        assert catalog_rows(collector, "SELECT size FROM loaded_files WHERE path = "
                            f"'trending/{old.name}'") == old.stat().st_size
    finally:
        runner.send_signal(signal.SIGTERM)
        runner.wait(timeout=60)
    assert runner.returncode == 0
    assert parts(collector) == []  # the stop closed every segment
    build(collector)
    assert catalog_rows(collector, "SELECT sum(lines) FROM loaded_files") == \
        lines_written(collector)
    assert catalog_rows(collector, "SELECT count(*) FROM loaded_files WHERE path GLOB "
                                   "'*.part'") == 0


@pytest.mark.timeout(180)
def test_with_the_runner_data_reaches_the_catalog_within_one_catalog_interval(
        tmp_path: Path, fake_github: Any) -> None:
    collector = daily_collector(tmp_path / "home", fake_github, {
        "trending": TRENDING, "search": {"weight": 0}, "docs": {"weight": 0}},
        catalog_interval=2)
    runner = collector.start_runner("--workers", "1")
    db = collector.data_dir / "catalog.sqlite"

    def fetches() -> int:
        try:
            return catalog_rows(collector, "SELECT count(*) FROM trending_fetches")
        except sqlite3.Error:  # not made yet
            return 0

    try:
        wait_for(lambda: db.exists() and fetches() > 0, 60, "the round in the catalog")
        # Every line is still in the open segment: the runner's build read it there.
        assert not list((collector.data_dir / "items").rglob("*.jsonl"))
    finally:
        runner.send_signal(signal.SIGTERM)
        runner.wait(timeout=60)
    assert runner.returncode == 0
