"""The dataset end to end: real ``scrapy crawl`` rounds against the fakes, then the real
``python -m runner catalog / export / report / view`` commands on what they wrote.

The fake GitHub's trending pages change with its ``generation`` (generation g leaves out a
page's first g rows, the rest move up unchanged), so rounds see rows that stay, move and leave.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
import pytest
from lxml import etree

from benchmarks.catalog import ItemWriter
from runner.catalog.schema import DATA_TABLES, TABLES
from runner.catalog.viewer import metadata
from runner.supervision.catalogschedule import NICENESS
from scraper.config.collector import ConfigError, parse_config
from scraper.trending.repositories import parse_trending
from tests.support.catalogtables import dump, dump_by_content
from tests.support.collector import RUNNER, Collector, free_port, in_child, next_second, wait_for
from tests.support.fakes.launcher import start_fake_docs, start_fake_github
from tests.support.incrawler import crawl_round

LANGUAGES, PERIODS = ["", "python"], ["daily"]
MAX_NICENESS = 19
"""Linux's lowest priority: os.nice() stops there."""
GENERATIONS = (0, 0, 2, 2, 5)
"""Trending rounds: the same page twice (every row unchanged: the content-hash dedup drops them
all, the observations must still have them), then rows leaving the list."""
LIMITS = {"search": {"limit": 1000, "window": 60}, "core": {"limit": 5000, "window": 60}}
ATOM = "{http://www.w3.org/2005/Atom}"


@dataclass
class Collected:
    collector: Collector
    served: dict[tuple[str, str], list[list[tuple[Any, ...]]]]  # list → rows of each round
    web_url: str


def _fetch(url: str) -> str:
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as response:
        return response.read().decode()


def _crawl(collector: Collector, spider: str) -> None:
    """A round of ``spider`` in this process (tests/support/incrawler.py): the catalog reads its
    items."""
    crawl_round(spider, collector.config_path)


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("dataset")
    github = start_fake_github(tmp / "fake-github", search_limit=1000, core_limit=5000,
                               core_window=60)
    docs = start_fake_docs(tmp / "fake-docs", sites=1, pages=12)
    try:
        collector = Collector(tmp / "home")
        collector.configure(github=github, docs_urls=[f"{docs.url()}/site0/"], spiders={
            # One developer list too: every data table of the catalog has rows.
            "trending": {"languages": LANGUAGES, "periods": PERIODS,
                         "developers": {"enabled": True, "languages": [""],
                                        "periods": ["daily"]}},
            "search": {"queries": ["topic:web-scraping"], "per_page": 30},
            "docs": {"max_pages_per_site": 12, "refresh_after": 0},
        })
        collector.update_config({"github": {"limits": LIMITS}})
        web = github.url("web")
        served: dict[tuple[str, str], list[list[tuple[Any, ...]]]] = defaultdict(list)
        for generation in GENERATIONS:
            github.control(generation=generation)
            for language in LANGUAGES:
                path = f"/trending/{language}" if language else "/trending"
                page = _fetch(f"{web}{path}?since=daily")
                assert page.count('<article class="Box-row"') == len(parse_trending(page, web))
                served[("daily", language)].append([
                    (r.rank, r.full_name, r.stars, r.forks, r.period_stars, r.language,
                     r.description) for r in parse_trending(page, web)])
            next_second()  # each round's stamps its own: "the latest" of two is never a tie
            _crawl(collector, "trending")
        for generation in (0, 1):
            github.control(generation=generation)
            docs.control(generation=generation)
            next_second()
            _crawl(collector, "search")
            _crawl(collector, "docs")
        yield Collected(collector, dict(served), web)
    finally:
        github.stop()
        docs.stop()


# pyarrow and PIL are used in a child: imported here they would grow this process, and every
# crawl a later test starts inherits its peak RSS (ru_maxrss survives exec), which Scrapy's
# memusage check (MEMUSAGE_LIMIT_MB) counts against the crawl.
READ_PARQUET = """
import json, sys, pyarrow.parquet as pq
print(json.dumps([list(row.values()) for row in pq.read_table(sys.argv[1]).to_pylist()],
                 default=lambda moment: moment.isoformat()))
"""
VERIFY_PNG = """
import json, sys
from PIL import Image  # matplotlib's own dependency
with Image.open(sys.argv[1]) as image:
    size = image.size
    image.verify()
print(json.dumps(list(size)))
"""


def needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")


def catalog(collector: Collector, *args: str) -> subprocess.CompletedProcess[str]:
    result = collector.runner("catalog", *args, timeout=120)
    assert result.returncode == 0, result.stderr
    return result


def copy_items(source: Collector, home: Path) -> Collector:
    clone = Collector(home)
    clone.configure()
    shutil.copytree(source.data_dir / "items", clone.data_dir / "items")
    return clone


@pytest.fixture(scope="module")
def built(collected: Collected) -> Collected:
    catalog(collected.collector)
    return collected


# --- observations and history ---------------------------------------------------------------------


@pytest.mark.timeout(240)
def test_observations_are_exactly_the_rows_served_unchanged_rows_included(built: Collected
                                                                         ) -> None:
    conn = sqlite3.connect(built.collector.data_dir / "catalog.sqlite")
    pages: dict[tuple[str, str], dict[str, list[tuple[Any, ...]]]] = defaultdict(dict)
    for observed_at, period, language, *row in conn.execute(
            "SELECT observed_at, period, trending_language, rank, full_name, stars, forks, "
            "period_stars, language, description FROM trending_observations "
            "ORDER BY observed_at, rank"):
        pages[(period, language)].setdefault(observed_at, []).append(tuple(row))
    assert set(pages) == {("daily", language) for language in LANGUAGES}
    for key, by_time in pages.items():
        rounds = [by_time[at] for at in sorted(by_time)]
        assert rounds == built.served[key], key
        # The first two rounds served the same page: the rows are observations twice, although
        # the content-hash dedup wrote none of them the second time.
        assert rounds[0] == rounds[1]
    written = [item for item in built.collector.items("trending") if "full_name" in item]
    assert len(written) < sum(len(r) for rounds in built.served.values() for r in rounds)


@pytest.mark.timeout(240)
def test_history_agrees_with_the_observations(built: Collected) -> None:
    conn = sqlite3.connect(built.collector.data_dir / "catalog.sqlite")
    expected: dict[tuple[str, str, str], dict[str, Any]] = {}
    for observed_at, period, language, rank, name, stars in conn.execute(
            "SELECT observed_at, period, trending_language, rank, full_name, stars "
            "FROM trending_observations ORDER BY observed_at"):
        entry = expected.setdefault((name, period, language), {
            "first_seen": observed_at, "observations": 0, "best_rank": rank,
            "stars_first": stars})
        entry.update(last_seen=observed_at, stars_last=stars,
                     observations=entry["observations"] + 1,
                     best_rank=min(entry["best_rank"], rank))
    history = {
        (name, period, language): {"first_seen": first, "last_seen": last, "observations": n,
                                   "best_rank": best, "stars_first": s1, "stars_last": s2}
        for name, period, language, first, last, n, best, s1, s2 in conn.execute(
            "SELECT full_name, period, trending_language, first_seen, last_seen, observations, "
            "best_rank, stars_first, stars_last FROM trending_history")}
    assert history == expected
    # Rows that left the list (generation 2, then 5) were last seen before the end.
    last_round = max(row[0] for row in conn.execute("SELECT observed_at FROM "
                                                    "trending_observations"))
    assert any(entry["last_seen"] < last_round for entry in history.values())
    assert max(entry["observations"] for entry in history.values()) == len(GENERATIONS)


@pytest.mark.timeout(240)
def test_repos_and_docs_pages_follow_their_items(built: Collected) -> None:
    conn = sqlite3.connect(built.collector.data_dir / "catalog.sqlite")
    search = built.collector.items("search")
    latest: dict[int, dict[str, Any]] = {}
    for item in sorted(search, key=lambda i: i["collected_at"]):
        latest[item["id"]] = item
    repos = {row[0]: row for row in conn.execute(
        "SELECT id, stargazers_count, full_name, last_seen FROM repos")}
    assert set(repos) == set(latest)
    for repo_id, item in latest.items():
        assert repos[repo_id][1:] == (item["stargazers_count"], item["full_name"],
                                      item["collected_at"])
    stars = conn.execute("SELECT count(*) FROM repo_stars").fetchone()[0]
    assert stars == len({(i["id"], i["collected_at"]) for i in search})
    docs = built.collector.items("docs")
    pages = dict(conn.execute("SELECT url, versions FROM docs_pages"))
    assert set(pages) == {item["url"] for item in docs}
    per_url: dict[str, set[str]] = defaultdict(set)
    for item in docs:
        per_url[item["url"]].add(item["content_hash"])
    assert pages == {url: len(hashes) for url, hashes in per_url.items()}
    assert max(pages.values()) == 2  # generation 1 changed the pages


@pytest.mark.timeout(240)
def test_rerunning_catalog_adds_nothing(built: Collected) -> None:
    db = built.collector.data_dir / "catalog.sqlite"
    before = dump(db)
    assert before["trending_observations"][0]
    result = catalog(built.collector)
    assert "catalog: 0 new files, 0 lines" in result.stdout
    assert dump(db) == before


@pytest.mark.timeout(240)
def test_an_open_segment_loads_to_its_last_newline_and_once_after_it_closes(
        built: Collected, tmp_path: Path) -> None:
    clone = copy_items(built.collector, tmp_path / "clone")
    first = sorted((clone.data_dir / "items" / "search").glob("*.jsonl"))[0]
    part = first.with_name(first.name + ".part")
    first.rename(part)
    whole = part.stat().st_size
    unfinished = json.loads(part.read_text().splitlines()[0]) | {"id": 10**12}
    with open(part, "a") as handle:  # a line a round is writing: not a line yet
        handle.write(json.dumps(unfinished))
    lock = clone.data_dir / "state" / "locks" / f"{part.name.split('-2')[0]}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as held:  # its crawl is live: the segment is not closed under it
        fcntl.flock(held, fcntl.LOCK_EX)
        loaded = catalog(clone).stdout
    assert "from open segments)" in loaded and "idle" not in loaded
    conn = sqlite3.connect(clone.data_dir / "catalog.sqlite")
    assert conn.execute("SELECT size FROM loaded_files WHERE path = ?",
                        (f"search/{part.name}",)).fetchone() == (whole,)
    conn.close()
    with open(part, "r+") as handle:
        handle.truncate(whole)
    part.rename(first)  # closed
    assert "catalog: 1 new files, 0 lines" in catalog(clone).stdout
    # The clone has the items only, not the rounds' gap ledger (state/ledger/).
    tables = dump(built.collector.data_dir / "catalog.sqlite")
    tables["fetch_ledger"] = (0, hashlib.sha256().hexdigest())
    assert dump(clone.data_dir / "catalog.sqlite") == tables


BULK_CATALOG = ("import sys; from runner.catalog import build; build.DEFER_INDEX_FILES = 10; "
                "from runner.cli.main import main; sys.exit(main())")
"""``python -m runner catalog`` that takes more than 10 new files for a bulk build (a first
build, a catch-up: a few long transactions, indexes made at the end)."""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("bulk", [False, True], ids=["by-groups", "bulk"])
def test_kill_9_mid_build_then_a_rerun_equals_one_clean_build(built: Collected,
                                                              tmp_path: Path,
                                                              bulk: bool) -> None:
    # The real items plus enough synthetic ones (the documented format) to kill a build midway.
    clean = copy_items(built.collector, tmp_path / "clean")
    ItemWriter(clean.data_dir / "items").write(30_000, per_file=250)
    killed = copy_items(clean, tmp_path / "killed")
    files = len(list((clean.data_dir / "items").rglob("*.jsonl")))
    catalog(clean)
    db = killed.data_dir / "catalog.sqlite"

    def loaded() -> int:
        try:
            conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=5)
            try:
                return conn.execute("SELECT count(*) FROM loaded_files").fetchone()[0]
            finally:
                conn.close()
        except sqlite3.Error:
            return 0

    counts = []
    for threshold in (1, files // 3, 2 * files // 3):
        command = [sys.executable, "-c", BULK_CATALOG] if bulk else RUNNER
        proc = subprocess.Popen([*command, "catalog"], cwd=killed.home, env=killed.env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for(lambda t=threshold: loaded() >= t, 60, f"{threshold} files loaded")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
        counts.append(loaded())
        # The catalog left behind is usable: intact, and readable as far as it got.
        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
    assert counts[-1] < files, "every build finished before its kill: nothing was tested"
    assert counts == sorted(counts)
    catalog(killed)
    assert dump(db) == dump(clean.data_dir / "catalog.sqlite")


def test_files_loaded_in_groups_give_the_tables_they_give_one_by_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.history import History
    from runner.catalog import build
    from scraper.utils.layout import DataLayout

    for name in ("grouped", "single"):
        items = tmp_path / name / "items"
        history = History(items, search_per_hour=40)  # repositories seen again and again
        for _ in range(30):
            history.hour()
        ItemWriter(items).write(3000, per_file=100)
        # Re-readings of some fetches (python -m runner reparse): later parsed_at, a row less.
        lines = (items / "trending").glob("trending-0of6-*.jsonl")
        snapshots = [json.loads(line) for path in sorted(lines)[:5]
                     for line in path.read_text().splitlines()]
        reparse = items / "trending" / "trending-reparse-20990101T000000Z.jsonl"
        reparse.write_text("".join(json.dumps({**snap, "rows": snap["rows"][1:],
                                                "parsed_at": "2099-01-01T00:00:00Z"}) + "\n"
                                   for snap in snapshots))
    monkeypatch.setattr(build, "DEFER_INDEX_FILES", 10)  # a first build: the index made last
    grouped = build.build_catalog(DataLayout(tmp_path / "grouped"))
    conn = sqlite3.connect(tmp_path / "grouped" / "catalog.sqlite")
    for index in build.DEFERRED_INDEXES:
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'index' "
                            "AND name = ?", (index,)).fetchone() == (1,)
    conn.close()
    monkeypatch.setattr(build, "DEFER_INDEX_FILES", 10**9)
    monkeypatch.setattr(build, "GROUP_BYTES", 0)  # every file its own transaction
    single = build.build_catalog(DataLayout(tmp_path / "single"))
    assert grouped.files == single.files > 100 and grouped.lines == single.lines
    # The same content; the numbers SQLite gave pages and lists may follow the load order.
    assert (dump_by_content(tmp_path / "grouped" / "catalog.sqlite")
            == dump_by_content(tmp_path / "single" / "catalog.sqlite"))


def test_one_build_at_a_time(built: Collected, tmp_path: Path) -> None:
    clone = copy_items(built.collector, tmp_path / "clone")
    lock = clone.data_dir / "state" / "catalog.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        result = catalog(clone)
    assert "another build is running" in result.stdout
    assert not (clone.data_dir / "catalog.sqlite").exists()


def test_bad_lines_are_named_and_skipped_the_rest_loaded(tmp_path: Path) -> None:
    clone = Collector(tmp_path / "bad")
    clone.configure()
    directory = clone.data_dir / "items" / "search"
    directory.mkdir(parents=True)
    good = {"spider": "search", "shard": "0/1", "collected_at": "2026-11-29T15:01:02Z",
            "content_hash": "ab" * 32, "id": 7, "full_name": "o/r", "stargazers_count": 3}
    path = directory / "search-0of1-20261129T150102Z.jsonl"
    path.write_text("\n".join([json.dumps(good), "{not json", json.dumps({**good, "id": "x"}),
                               json.dumps({**good, "id": 8})]) + "\n")
    result = clone.runner("catalog")
    assert result.returncode == 0, result.stderr
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 2, errors
    assert f"{path}:2: not JSON" in errors[0]
    assert f"{path}:3: id: 'x' is not a repository id (integer); line skipped" in errors[1]
    assert "Traceback" not in result.stderr
    conn = sqlite3.connect(clone.data_dir / "catalog.sqlite")
    assert sorted(r[0] for r in conn.execute("SELECT id FROM repos")) == [7, 8]
    assert conn.execute("SELECT lines, bad_lines FROM loaded_files").fetchone() == (4, 2)


# --- export ---------------------------------------------------------------------------------------


@pytest.mark.timeout(240)
@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_row_counts_equal_table_counts(built: Collected, tmp_path: Path,
                                              fmt: str) -> None:
    if fmt == "parquet":
        needs("pyarrow")
    out = tmp_path / "out"
    result = built.collector.runner("export", "--format", fmt, "--out", str(out))
    assert result.returncode == 0, result.stderr
    conn = sqlite3.connect(built.collector.data_dir / "catalog.sqlite")
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{t}.{fmt}" for t in DATA_TABLES)
    for table in DATA_TABLES:
        expected = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        path = out / f"{table}.{fmt}"
        if fmt == "csv":
            import csv

            with open(path, newline="", encoding="utf-8") as handle:
                rows = list(csv.reader(handle))
            assert rows[0] == [c for c, _, _ in next(t for t in TABLES if t.name == table)
                               .columns]
            count = len(rows) - 1
        elif fmt == "jsonl":
            count = len(path.read_text(encoding="utf-8").splitlines())
        else:
            rows = in_child(READ_PARQUET, path)
            count = len(rows)
            if table == "trending_observations":  # reads back to exactly the table
                got = [tuple(row) for row in rows]
                assert got == [  # observed_at a timestamp[us, UTC]
                    (datetime.fromisoformat(row[0]).isoformat(), *row[1:])
                    for row in conn.execute(
                        "SELECT * FROM trending_observations ORDER BY period, "
                        "trending_language, observed_at, rank").fetchall()]
        assert count == expected and expected > 0, (table, count, expected)


def test_export_one_table_and_bad_arguments(built: Collected, tmp_path: Path) -> None:
    result = built.collector.runner("export", "--format", "csv", "--out", str(tmp_path),
                                    "--table", "repos")
    assert result.returncode == 0, result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["repos.csv"]
    bad = built.collector.runner("export", "--format", "csv", "--out", str(tmp_path),
                                 "--table", "nope")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "nope" in bad.stderr


def test_export_parquet_without_pyarrow_names_the_extra(built: Collected,
                                                        tmp_path: Path) -> None:
    blocker = tmp_path / "block" / "pyarrow"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('pyarrow is not installed')\n")
    env = built.collector.env(PYTHONPATH=str(blocker.parent))
    result = built.collector.runner("export", "--format", "parquet", "--out",
                                    str(tmp_path / "out"), env=env)
    assert result.returncode == 2
    assert result.stderr.strip() == ("python -m runner export: --format parquet needs "
                                     "pyarrow: pip install -e '.[export]'")
    assert not (tmp_path / "out").exists()


# --- report, feeds, viewer ------------------------------------------------------------------------


@pytest.mark.timeout(240)
def test_report_writes_valid_pngs_and_an_index(built: Collected, tmp_path: Path) -> None:
    needs("matplotlib")
    out = tmp_path / "report"
    result = built.collector.runner("report", "--out", str(out))
    assert result.returncode == 0, result.stderr
    pngs = sorted(out.glob("*.png"))
    assert [p.stem for p in pngs] == sorted(["items_per_hour", "data_size", "github_budget",
                                             "top_risers"])
    for png in pngs:
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", png
        width, height = struct.unpack(">II", data[16:24])
        assert (width, height) == (900, 450), png
        assert in_child(VERIFY_PNG, png) == [width, height]  # every chunk's CRC checked
    index = (out / "index.html").read_text()
    for png in pngs:
        assert f'src="{png.name}"' in index
    assert "<table>" in index and "stars gained" in index


@pytest.mark.timeout(240)
def test_feeds_validate_as_atom_one_entry_per_repository_new_on_the_list(built: Collected
                                                                        ) -> None:
    needs("feedgen")
    conn = sqlite3.connect(built.collector.data_dir / "catalog.sqlite")
    feeds = built.collector.data_dir / "feeds"
    # (the docs site's feed of changed pages is tests/e2e/test_docs_llms.py's)
    assert sorted(p.name for p in feeds.glob("trending-*")) == [
        "trending-daily-all.atom", "trending-daily-python.atom",
        "trending-developers-daily-all.atom"]
    developers = etree.parse(str(feeds / "trending-developers-daily-all.atom")).getroot()
    assert developers.tag == f"{ATOM}feed"
    assert [e.find(f"{ATOM}link").get("href").removeprefix(built.web_url + "/")
            for e in developers.findall(f"{ATOM}entry")] == [login for login, in conn.execute(
                "SELECT login FROM trending_developer_history ORDER BY first_seen DESC, login "
                "LIMIT 50")]
    for language in LANGUAGES:
        root = etree.parse(str(feeds / f"trending-daily-{language or 'all'}.atom")).getroot()
        assert root.tag == f"{ATOM}feed"
        for required in ("id", "title", "updated"):
            assert len(root.findall(f"{ATOM}{required}")) == 1, required
        assert root.find(f"{ATOM}author/{ATOM}name").text
        assert [link.get("href") for link in root.findall(f"{ATOM}link")
                if link.get("rel") == "self"] == [f"trending-daily-{language or 'all'}.atom"]
        entries = root.findall(f"{ATOM}entry")
        expected = [name for name, in conn.execute(
            "SELECT full_name FROM trending_history WHERE period = 'daily' AND "
            "trending_language = ? ORDER BY first_seen DESC, full_name LIMIT 50", (language,))]
        assert [e.find(f"{ATOM}link").get("href").removeprefix(built.web_url + "/")
                for e in entries] == expected
        ids = [e.find(f"{ATOM}id").text for e in entries]
        assert len(set(ids)) == len(ids)
        for entry in entries:
            for required in ("id", "title", "updated"):
                assert entry.find(f"{ATOM}{required}").text, required
            updated = entry.find(f"{ATOM}updated").text
            assert time.strptime(updated[:19], "%Y-%m-%dT%H:%M:%S")
            assert updated.endswith(("Z", "+00:00"))
        assert root.find(f"{ATOM}updated").text == max(
            e.find(f"{ATOM}updated").text for e in entries)


def test_viewer_metadata_describes_every_column_and_its_queries_run(built: Collected) -> None:
    meta = metadata()
    database = meta["databases"]["catalog"]
    conn = sqlite3.connect(built.collector.data_dir / "catalog.sqlite")
    for table, spec in database["tables"].items():
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        assert list(spec["columns"]) == columns, table
        assert spec["title"] and all(spec["columns"].values())
    hidden = {name for name, spec in database["tables"].items() if spec.get("hidden")}
    assert hidden == {"budget_samples", "loaded_files", "size_samples", "docs_feed_entries",
                      "docs_feed_pending", "docs_feed_state"}
    assert set(database["queries"]) == {"rising_this_week", "longest_on_trending",
                                        "when_was_it_trending", "recently_changed_docs",
                                        "when_was_a_developer_trending", "gaps"}
    (name,) = conn.execute("SELECT full_name FROM trending_history LIMIT 1").fetchone()
    results = {query_name: conn.execute(query["sql"], {"full_name": name, "login": "octocat",
                                                       "days": 7}).fetchall()
               for query_name, query in database["queries"].items()}
    # A riser gained stars (the fixture's week may have none:
    # tests/runner/catalog/test_report_axes.py).
    assert all(gained > 0 for _, gained, *_ in results["rising_this_week"])
    assert results["longest_on_trending"]
    assert results["when_was_it_trending"]
    assert results["recently_changed_docs"]  # the docs generation changed every page


def test_view_without_datasette_is_one_line_naming_the_extra(built: Collected) -> None:
    if importlib.util.find_spec("datasette") is not None:
        pytest.skip("datasette is installed here")
    result = built.collector.runner("view", "--port", str(free_port()))
    assert result.returncode == 2
    assert result.stderr.strip() == ("python -m runner view: Datasette is not installed: "
                                     "pip install -e '.[view]'")


# --- the runner keeps it up to date ---------------------------------------------------------------


@pytest.mark.timeout(120)
def test_the_runner_builds_the_catalog_every_catalog_interval(tmp_path: Path) -> None:
    github = start_fake_github(tmp_path / "fake-github")
    try:
        collector = Collector(tmp_path / "home")
        collector.configure(github=github, catalog_interval=1, spiders={
            "trending": {"languages": [""], "periods": ["daily"]},
            "search": {"weight": 0}, "docs": {"weight": 0}})
        runner = collector.start_runner("--workers", "1")
        db = collector.data_dir / "catalog.sqlite"
        log = collector.data_dir / "logs" / "runner.log"
        def catalog_children() -> list[int]:
            """The niceness of each catalog child of the runner now."""
            try:
                children = psutil.Process(runner.pid).children()
                return [p.nice() for p in children if "catalog" in p.cmdline()]
            except psutil.Error:
                return []

        try:
            # NICENESS below the runner, whatever the runner's own (the suite under `nice -n
            # 10` makes it 10, the child 19, the kernel's lowest priority).
            lower = min(MAX_NICENESS, psutil.Process(runner.pid).nice() + NICENESS)
            assert wait_for(catalog_children, 60, "the runner's catalog child",
                            interval=0.02) == [lower]
            wait_for(lambda: log.exists() and log.read_text().count("catalog updated") >= 2,
                     60, "two catalog builds by the runner")
        finally:
            runner.send_signal(signal.SIGTERM)
            runner.wait(timeout=30)
        assert runner.returncode == 0
        conn = sqlite3.connect(db)
        assert conn.execute("SELECT count(*) FROM trending_observations").fetchone()[0] > 0
        builds = (collector.data_dir / "logs" / "catalog.log").read_text().splitlines()
        assert len(builds) >= 2 and all(line.startswith("catalog: ") for line in builds)
    finally:
        github.stop()


def test_catalog_interval_is_validated() -> None:
    assert parse_config("catalog_interval: 30m\n", "c.yaml").catalog_interval == 1800
    assert parse_config("", "c.yaml").catalog_interval == 3600
    with pytest.raises(ConfigError) as error:
        parse_config("catalog_interval: soon\n", "c.yaml")
    assert str(error.value) == ("c.yaml: catalog_interval: 'soon' is not a duration such as "
                                "90, 45s, 30m, 12h or 7d")


def test_a_catalog_before_the_form_counts_takes_them_on_connect(tmp_path: Path) -> None:
    """docs_contents of a catalog made before tabs, tables and callouts were counted gains the
    columns at its end on the next connect, NULL in the rows it has; the per-site totals read
    it before (status, read-only) and after, a count it lacks being none of that form."""
    from runner.catalog.schema import TABLE_BY_NAME, connect
    from runner.catalog.sitefidelity import site_fidelity

    db = tmp_path / "catalog.sqlite"
    old = sqlite3.connect(db)
    old.execute("CREATE TABLE docs_contents (url TEXT NOT NULL, content_hash TEXT NOT NULL, "
                "title TEXT, markdown TEXT, code_blocks INTEGER, code_blocks_exact INTEGER, "
                "version TEXT, PRIMARY KEY (url, content_hash)) WITHOUT ROWID")
    old.execute(TABLE_BY_NAME["docs_pages"].ddl())
    old.execute("INSERT INTO docs_contents VALUES ('https://d.example/a', 'h', 'A', '# A', 2, "
                "1, NULL)")
    old.execute("INSERT INTO docs_pages VALUES ('https://d.example/a', 'A', 'h', "
                "'2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', 1)")
    old.execute("PRAGMA user_version=2")
    old.commit()
    (before,) = site_fidelity(old, ["https://d.example/"])
    old.close()
    conn = connect(db)
    columns = [row[1] for row in conn.execute("PRAGMA table_info(docs_contents)")]
    assert columns == TABLE_BY_NAME["docs_contents"].column_names
    assert conn.execute("SELECT code_blocks, tabs, tables_kept, callouts FROM docs_contents"
                        ).fetchall() == [(2, None, None, None)]
    (after,) = site_fidelity(conn, ["https://d.example/"])
    for site in (before, after):
        assert (site.pages, site.pages_below, site.below["code_blocks"], site.below["tables"]) \
            == (1, 1, 1, 0)
        assert site.describe() == ("https://d.example/: 1/2 code blocks byte-exact (50.0%) on "
                                   "1 pages, 1 pages below 100% (code blocks 1)")
