"""Trending history that survives GitHub: the page archive, drift, re-parse, spoken languages,
``python -m runner history``; real ``scrapy crawl`` and ``python -m runner`` processes against
the fake GitHub."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from runner.catalog.schema import SCHEMA_VERSION
from runner.core.health import shard_health, unhealthy_spiders
from runner.core.runnerstate import SlotRecord
from scraper.config.collector import HealthConfig
from scraper.trending.archive import (
    ArchivedPage,
    FilesystemPageArchive,
    ParseProfile,
    body_sha256,
)
from scraper.trending.drift import drift_reason
from scraper.utils.statefile import WorkerRecord
from tests.support.collector import Collector
from tests.support.fakes.data import TRENDING_PAGES
from tests.support.incrawler import crawl_log, crawl_round

LISTS = {"languages": ["", "python"], "periods": ["daily"], "spoken_languages": ["", "zh"]}
BROKEN = {"TRENDING_PARSER": "tests.support.parsers.broken.parse_losing_fields"}
GENERATIONS = (0, 1, 2, 3)


def _crawl(collector: Collector) -> dict[str, Any]:
    crawl_round("trending", collector.config_path)
    return json.loads((collector.data_dir / "state/workers/trending-0of1.json").read_text())


def _collect(collector: Collector, github: Any, broken_rounds: set[int],
             log: list[str] | None = None) -> list[dict[str, Any]]:
    """One round of the trending spider per generation, in this process, the parser broken
    in ``broken_rounds``; what they logged goes to ``log``."""
    states = []
    for generation in GENERATIONS:
        broken = generation in broken_rounds
        collector.configure(github=github, spiders={"trending": {
            **LISTS, "settings": BROKEN if broken else {}}})
        github.control(generation=generation)
        with crawl_log() as lines:
            states.append(_crawl(collector))
        if log is not None:
            log.extend(lines)
    return states


def history_by_order(db: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Observations and history with each time replaced by its fetch's place in its list:
    two collectors fetch at different instants, never at the same ones."""
    conn = sqlite3.connect(db)
    try:
        order = {}
        for period, language, spoken, observed_at in conn.execute(
                "SELECT DISTINCT period, trending_language, spoken_language_code, observed_at "
                "FROM trending_observations ORDER BY 1, 2, 3, 4"):
            key = (period, language, spoken)
            order[(key, observed_at)] = sum(1 for k, _ in order if k == key)
        observations = sorted(
            (period, language, spoken, order[((period, language, spoken), at)], *rest)
            for at, period, language, spoken, *rest in conn.execute(
                "SELECT observed_at, period, trending_language, spoken_language_code, rank, "
                "full_name, stars, forks, period_stars, language, description "
                "FROM trending_observations"))
        history = sorted(
            (name, period, language, spoken, order[((period, language, spoken), first)],
             order[((period, language, spoken), last)], *rest)
            for name, period, language, spoken, first, last, *rest in conn.execute(
                "SELECT full_name, period, trending_language, spoken_language_code, "
                "first_seen, last_seen, observations, best_rank, stars_first, stars_last "
                "FROM trending_history"))
        return observations, history
    finally:
        conn.close()


def exact_dump(db: Path) -> list[list[tuple[Any, ...]]]:
    conn = sqlite3.connect(db)
    try:
        return [conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3").fetchall()
                for table in ("trending_observations", "trending_history")]
    finally:
        conn.close()


@pytest.mark.timeout(400)
def test_a_parser_broken_while_collecting_loses_no_history_after_reparse(
        tmp_path: Path, fake_github: Any) -> None:
    never_broke = Collector(tmp_path / "never-broke")
    _collect(never_broke, fake_github, broken_rounds=set())
    assert never_broke.runner("catalog").returncode == 0

    broke = Collector(tmp_path / "broke")
    log: list[str] = []
    states = _collect(broke, fake_github, broken_rounds={1, 2}, log=log)
    # The round the parser broke is drift, named by list and field, then again the next
    # round (the broken rows never become the list's usual); the fixed round is clean.
    assert [s["drift_listings"] for s in states] == [0, 4, 4, 0]
    web = fake_github.url("web")
    assert re.fullmatch(rf"markup drift: {re.escape(web)}/trending\S*: language, description "
                        r"missing on all 2\d rows", states[1]["drift"]), states[1]["drift"]
    assert any("markup drift" in line for line in log)
    assert broke.runner("catalog").returncode == 0
    assert history_by_order(broke.data_dir / "catalog.sqlite") != \
        history_by_order(never_broke.data_dir / "catalog.sqlite")

    # Every page was archived: 4 lists × 4 rounds.
    archive = FilesystemPageArchive.at(_layout(broke), "trending")
    try:
        pages = list(archive.pages())
        assert len(pages) == 16
        assert all(archive.body(page) for page in pages)
    finally:
        archive.close()
    snapshots = [i for i in broke.items("trending") if "rows" in i]
    assert {s["archive_sha256"] for s in snapshots} <= {p.sha256 for p in pages}
    assert {s["spoken_language_code"] for s in snapshots} == {None, "zh"}

    result = broke.runner("reparse", "--spider", "trending")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("reparse: 16 archived pages read, 8 read differently -> ")
    assert history_by_order(broke.data_dir / "catalog.sqlite") == \
        history_by_order(never_broke.data_dir / "catalog.sqlite")

    before = exact_dump(broke.data_dir / "catalog.sqlite")
    again = broke.runner("reparse", "--spider", "trending", "--since", "2000-01-01")
    assert again.returncode == 0, again.stderr
    assert again.stdout == "reparse: 16 archived pages read, 0 read differently " \
                           "(nothing to write)\n"
    assert exact_dump(broke.data_dir / "catalog.sqlite") == before

    # When was it trending: the first repository of the all-languages page.
    name = snapshots[0]["rows"][0]["full_name"]
    shown = broke.runner("history", name)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"{name} on GitHub trending: ")
    assert all(len(line) <= 80 for line in lines)
    machine = json.loads(broke.runner("history", name, "--json").stdout)
    assert machine["full_name"] == name
    assert {(r["trending_language"], r["spoken_language_code"]) for r in machine["lists"]} \
        >= {("", ""), ("", "zh")}
    assert all(r["days"] == 1 and r["best_rank"] >= 1 for r in machine["lists"])
    unknown = broke.runner("history", "nobody/never-trending")
    assert unknown.returncode == 1
    assert unknown.stdout == ""
    assert unknown.stderr.count("\n") == 1 and "never seen" in unknown.stderr


def _layout(collector: Collector) -> Any:
    from scraper.utils.layout import DataLayout

    return DataLayout(collector.data_dir)


def _profile(rows: int, language: int, stars: int, description: int) -> ParseProfile:
    return ParseProfile(rows=rows, with_language=language, with_stars=stars,
                        with_description=description)


def test_drift_names_what_the_list_lost() -> None:
    usual = [_profile(25, 23, 25, 24)] * 3
    assert drift_reason(_profile(25, 23, 25, 24), usual) is None
    assert drift_reason(_profile(25, 0, 25, 24), usual) == "language missing on all 25 rows"
    assert drift_reason(_profile(25, 23, 0, 24), usual) == "stars missing on all 25 rows"
    assert drift_reason(_profile(10, 9, 10, 10), usual) == "10 rows where the list had 25"
    assert drift_reason(_profile(0, 0, 0, 0), usual) is None  # that is `empty`
    assert drift_reason(_profile(25, 0, 25, 24), []) is None  # no history yet
    # A field the list rarely had is not missed.
    assert drift_reason(_profile(25, 23, 25, 0), [_profile(25, 23, 25, 3)]) is None


def test_drift_is_one_unhealthy_line_per_spider() -> None:
    slot = SlotRecord(spider="trending", shard="0/1", slug="trending-0of1", state="sleeping")
    line = "markup drift: https://github.com/trending?since=daily: stars missing on all 25 rows"
    verdict = shard_health(slot, WorkerRecord(drift_listings=1, drift=line), HealthConfig(),
                           60, 0)
    assert (verdict.verdict, verdict.reason) == ("drift", line)
    assert unhealthy_spiders([verdict], 3) == {"trending": ("drift", f"trending 1/1 shards: "
                                                                     f"{line}")}


def test_archive_gives_every_fetch_back_byte_for_byte_at_a_fraction_of_its_size(
        tmp_path: Path) -> None:
    fixture = TRENDING_PAGES / "2026-04_python_daily.html"
    body = fixture.read_bytes()
    # GitHub serves every page with its own request id and tokens.
    again = body.replace(b"F579:1C9196:20BC9FF:27D3E8A:69ED000F",
                         b"F579:1C9196:20BC9FF:27D3E8A:69ED1234")
    assert again != body
    archive = FilesystemPageArchive(tmp_path / "bodies", tmp_path / "state" / "a.sqlite")
    try:
        pages = []
        for i, served in enumerate([body, again, body]):
            page = ArchivedPage("https://github.com/trending/python?since=daily",
                                f"2026-12-01T00:0{i}:00.000Z", 200, body_sha256(served),
                                "daily|python|", "1")
            archive.put(page, served)
            pages.append(page)
        assert [archive.body(p) for p in pages] == [body, again, body]
        with sqlite3.connect(tmp_path / "state" / "a.sqlite") as conn:
            sizes = [row[0] for row in conn.execute("SELECT length(frame) FROM frames")]
        # The first fetch stands alone; the others are what differs from it.
        assert sizes[0] < len(body) / 8 and max(sizes[1:]) < 200
        assert archive.prune("2026-12-01T00:02:00.000Z") == 2
        assert archive.body(pages[2]) == body
        assert archive.prune("2026-12-02T00:00:00.000Z") == 1
        with sqlite3.connect(tmp_path / "state" / "a.sqlite") as conn:
            assert conn.execute("SELECT count(*) FROM frames").fetchone() == (0,)
    finally:
        archive.close()


OLD_SCHEMA = """
CREATE TABLE trending_observations (observed_at TEXT NOT NULL, period TEXT NOT NULL,
  trending_language TEXT NOT NULL, rank INTEGER NOT NULL, full_name TEXT NOT NULL,
  stars INTEGER, forks INTEGER, period_stars INTEGER, language TEXT, description TEXT,
  PRIMARY KEY (period, trending_language, observed_at, rank)) WITHOUT ROWID;
CREATE INDEX observations_by_time ON trending_observations (observed_at);
CREATE TABLE trending_history (full_name TEXT NOT NULL, period TEXT NOT NULL,
  trending_language TEXT NOT NULL, first_seen TEXT NOT NULL, last_seen TEXT NOT NULL,
  observations INTEGER NOT NULL, best_rank INTEGER NOT NULL, stars_first INTEGER,
  stars_last INTEGER, PRIMARY KEY (full_name, period, trending_language)) WITHOUT ROWID;
CREATE INDEX history_by_first_seen ON trending_history (period, trending_language, first_seen);
"""


def test_a_catalog_of_the_earlier_schema_is_migrated_keeping_every_observation(
        tmp_path: Path) -> None:
    from runner.catalog.build import build_catalog
    from scraper.utils.layout import DataLayout

    layout = DataLayout(tmp_path / "data")
    layout.root.mkdir()
    old = sqlite3.connect(layout.catalog_db)
    old.executescript(OLD_SCHEMA)
    rows = [("2026-11-30T10:00:00.000Z", "daily", "", 1, "a/one", 10, 1, 5, "Go", "x"),
            ("2026-11-30T10:00:00.000Z", "daily", "", 2, "b/two", 8, 0, 2, None, None),
            ("2026-11-30T10:01:00.000Z", "daily", "", 1, "a/one", 10, 1, 5, "Go", "x"),
            ("2026-11-30T10:01:00.000Z", "daily", "", 2, "b/two", 8, 0, 2, None, None),
            ("2026-11-30T10:02:00.000Z", "daily", "", 1, "b/two", 9, 0, 3, None, None)]
    old.executemany("INSERT INTO trending_observations VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    old.executemany("INSERT INTO trending_history VALUES (?,?,?,?,?,?,?,?,?)", [
        ("a/one", "daily", "", rows[0][0], rows[2][0], 2, 1, 10, 10),
        ("b/two", "daily", "", rows[1][0], rows[4][0], 3, 1, 8, 9)])
    old.commit()
    old.close()

    # A round collected after the upgrade: one more fetch of the same list.
    items = layout.items_dir("trending")
    items.mkdir(parents=True)
    (items / "trending-0of1-20261130T100300Z.jsonl").write_text(json.dumps({
        "observed_at": "2026-11-30T10:03:00.000Z", "period": "daily",
        "trending_language": None, "url": "https://github.com/trending?since=daily",
        "rows": [{"rank": 1, "full_name": "b/two", "description": None, "language": None,
                  "stars": 9, "forks": 0, "period_stars": 3, "built_by": []}],
        "spider": "trending", "shard": "0/1", "collected_at": "2026-11-30T10:03:00Z",
        "content_hash": "0" * 64}) + "\n")
    build_catalog(layout)

    conn = sqlite3.connect(layout.catalog_db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute(
            "SELECT observed_at, period, trending_language, rank, full_name, stars, forks, "
            "period_stars, language, description FROM trending_observations "
            "WHERE spoken_language_code = '' ORDER BY observed_at, rank").fetchall() == [
            *rows, ("2026-11-30T10:03:00.000Z", "daily", "", 1, "b/two", 9, 0, 3, None, None)]
        # Two fetches showed the same page: stored once.
        assert conn.execute("SELECT count(*) FROM trending_pages").fetchone()[0] == 2
        assert conn.execute(
            "SELECT full_name, spoken_language_code, first_seen, last_seen, observations, "
            "stars_last FROM trending_history ORDER BY full_name").fetchall() == [
            ("a/one", "", rows[0][0], rows[2][0], 2, 10),
            ("b/two", "", rows[1][0], "2026-11-30T10:03:00.000Z", 4, 9)]
    finally:
        conn.close()
