"""Trending developers (``/trending/developers``): the parser on real pages of three markup
generations, the catalog's tables and history, ``runner history LOGIN``, the feeds, drift and
reparse; one real ``scrapy crawl trending`` against the fake GitHub end to end. Also: reparse
applies the spider's element cut, and the page archive is a store built by its setting."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse

from runner.catalog.build import build_catalog
from runner.catalog.reparse import reparse, trending_settings
from scraper.config.collector import DeveloperList, parse_config
from scraper.extensions.feedfilter import RowsOnly
from scraper.items import TrendingDeveloperItem, TrendingRepoItem
from scraper.trending.archive import (
    ArchivedPage,
    FilesystemPageArchive,
    PageArchiveStorage,
    body_sha256,
)
from scraper.trending.developers import DeveloperRow, parse_developers
from scraper.trending.drift import DEVELOPER_FIELDS, drift_reason
from scraper.trending.memoryarchive import MemoryPageArchive
from scraper.trending.pages import (
    DEVELOPERS,
    developer_snapshot_rows,
    list_key,
    page_item,
    parse_list_key,
    parse_profile,
)
from scraper.utils.bounds import element_count
from scraper.utils.layout import DataLayout
from spiders.trending import TrendingSpider, listing_of
from tests.support.collector import Collector
from tests.support.fakes.data import TRENDING_PAGES
from tests.support.incrawler import project_crawler
from tests.support.parsers import broken
from tests.support.paths import DATA

PAGES = DATA / "trending_developers"
REPO_PAGE = TRENDING_PAGES / "2026-04_python_daily.html"
BASE = "https://github.com/trending/developers"


def _parse(name: str) -> list[DeveloperRow]:
    return parse_developers((PAGES / f"{name}.html").read_bytes(), BASE)


@pytest.mark.parametrize(("page", "first", "special"), [
    ("2020-07_all_daily",
     DeveloperRow(1, "jstrachan", "James Strachan", "https://github.com/jstrachan",
                  "https://avatars1.githubusercontent.com/u/30140?s=96&v=4", "jstrachan/scopt",
                  "simple scala command line options parsing"), None),
    ("2021-04_all_daily",
     DeveloperRow(1, "nunomaduro", "Nuno Maduro", "https://github.com/nunomaduro",
                  "https://avatars.githubusercontent.com/u/5457236?s=96&v=4",
                  "nunomaduro/larastan", "⚗️ Adds static analysis to Laravel improving "
                  "developer productivity and code quality"), None),
    # The name equals the login and is still a name: the login has its own line.
    ("2021-04_python_daily",
     DeveloperRow(1, "PySimpleGUI", "PySimpleGUI", "https://github.com/PySimpleGUI",
                  "https://avatars.githubusercontent.com/u/46163555?s=96&v=4",
                  "PySimpleGUI/PySimpleGUI", None), None),
    # A row without a popular repository ("Joined on …"), and one without a display name.
    ("2026-08_all_daily",
     DeveloperRow(1, "Astro-Han", "AstroHan", "https://github.com/Astro-Han",
                  "https://avatars.githubusercontent.com/u/255364436?s=96&v=4",
                  "Astro-Han/karpathy-llm-wiki", "Agent Skills-compatible LLM wiki for Claude "
                  "Code, Cursor, and Codex. Build a Karpathy-style knowledge base from raw "
                  "sources, citations, a…"),
     {10: ("emontnemery", "Erik Montnemery", None, None)}),
])
def test_the_parser_reads_every_markup_generation_field_exact(
        page: str, first: DeveloperRow, special: dict[int, tuple[Any, ...]] | None) -> None:
    rows = _parse(page)
    assert [r.rank for r in rows] == list(range(1, 26))
    if first.repo_description is None:  # PySimpleGUI's is long: its start is enough
        assert rows[0].repo_description.startswith("Launched in 2018 Actively developed")
        rows[0] = DeveloperRow(*[getattr(rows[0], f) for f in DeveloperRow.__slots__][:-1],
                               None)
    assert rows[0] == first
    assert len({r.login for r in rows}) == 25
    assert all(r.avatar_url and r.avatar_url.startswith("https://avatars") for r in rows)
    assert all(r.url == f"https://github.com/{r.login}" for r in rows)
    for rank, (login, name, repo, description) in (special or {}).items():
        row = rows[rank - 1]
        assert (row.login, row.name, row.repo_full_name, row.repo_description) == \
            (login, name, repo, description)
    with_repo = [r for r in rows if r.repo_full_name]
    assert all(r.repo_full_name.split("/")[0] == r.login or "/" in r.repo_full_name
               for r in with_repo)


def test_2026_page_rows_without_a_name_or_repository() -> None:
    rows = {r.login: r for r in _parse("2026-08_all_daily")}
    assert rows["yhirose"].name is None  # the page shows only the login
    assert rows["yhirose"].repo_full_name == "yhirose/cpp-httplib"
    assert sorted(login for login, r in rows.items() if r.repo_full_name is None) == \
        ["RaananW", "bradfitz", "emontnemery"]
    assert parse_developers("", BASE) == []
    assert parse_developers(REPO_PAGE.read_bytes(), BASE) == []  # a repository page: no rows
    assert len(parse_developers((PAGES / "2021-04_all_daily.html").read_bytes(), BASE,
                                max_rows=3)) == 3


def test_config_turns_the_developer_lists_on_and_after_the_repository_lists() -> None:
    default = parse_config("{}\n", "collector.yaml", Path("/srv"))
    assert not default.trending.developers.enabled
    assert all(not isinstance(e, DeveloperList) for e in default.trending.start_entries())
    config = parse_config(
        "spiders:\n  trending:\n    languages: ['', python]\n    periods: [daily]\n"
        "    developers:\n      enabled: true\n      languages: ['', rust]\n"
        "      periods: [weekly]\n", "collector.yaml", Path("/srv"))
    assert config.trending.start_entries() == [
        ("", "daily", ""), ("python", "daily", ""),
        DeveloperList("", "weekly"), DeveloperList("rust", "weekly")]
    on = parse_config("spiders:\n  trending:\n    developers: {enabled: true}\n",
                      "collector.yaml", Path("/srv"))
    assert on.trending.start_entries()[-3:] == [
        DeveloperList("", p) for p in ("daily", "weekly", "monthly")]
    from scraper.config.collector import ConfigError

    with pytest.raises(ConfigError, match=r"^collector\.yaml: spiders\.trending\.developers"
                                          r"\.periods\[0\]: 'hourly' is not one of daily"):
        parse_config("spiders:\n  trending:\n    developers: {periods: [hourly]}\n",
                     "collector.yaml", Path("/srv"))


def test_the_spider_asks_developer_urls_and_builds_its_archive_by_setting(
        tmp_path: Path) -> None:
    crawler = project_crawler(
        TrendingSpider, COLLECTOR_DATA_DIR=str(tmp_path), GITHUB_WEB_URL="https://gh.test",
        TRENDING_LANGUAGES=[""], TRENDING_PERIODS=["daily"],
        TRENDING_DEVELOPERS_ENABLED=True, TRENDING_DEVELOPER_LANGUAGES=["", "c++"],
        TRENDING_DEVELOPER_PERIODS=["weekly"],
        TRENDING_ARCHIVE_STORAGE="tests.e2e.test_trending_developers.CountingArchive")
    spider = crawler.spider
    try:
        assert isinstance(spider.archive, CountingArchive)
        assert isinstance(spider.archive, PageArchiveStorage) and spider.archive.up
        assert CountingArchive.built_with is crawler
        urls = [spider.listing_url(e.language, e.period, "", DEVELOPERS)
                for e in spider.start_entries() if isinstance(e, DeveloperList)]
        assert urls == ["https://gh.test/trending/developers?since=weekly",
                        "https://gh.test/trending/developers/c++?since=weekly"]
        # A page asked for by hand (scrapy parse URL --spider trending): its kind from its URL.
        for url, expected in (
                ("https://gh.test/trending/developers/rust?since=weekly",
                 (DEVELOPERS, "rust", "weekly", "")),
                ("https://gh.test/trending/developers", (DEVELOPERS, "", "daily", "")),
                ("https://gh.test/trending/go?since=monthly&spoken_language_code=zh",
                 ("repositories", "go", "monthly", "zh"))):
            assert listing_of(HtmlResponse(url, request=Request(url))) == expected
    finally:
        spider.archive.close()


class CountingArchive(FilesystemPageArchive):
    built_with: Any = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> CountingArchive:
        cls.built_with = crawler
        return cls.at(DataLayout.from_settings(crawler.settings), "trending")


def test_developer_rows_stay_out_of_plain_feeds_unless_named() -> None:
    developer = TrendingDeveloperItem(login="x")
    assert not RowsOnly({}).accepts(developer)
    assert RowsOnly({}).accepts(TrendingRepoItem(full_name="a/b"))
    assert RowsOnly({"item_classes": ["scraper.items.TrendingDeveloperItem"]}).accepts(developer)


def test_drift_on_a_developer_list_names_what_it_lost() -> None:
    page = (PAGES / "2026-08_all_daily.html").read_bytes()
    usual = parse_profile(developer_snapshot_rows(parse_developers(page, BASE)), DEVELOPERS)
    lost = parse_profile(developer_snapshot_rows(
        broken.parse_developers_losing_fields(page, BASE)), DEVELOPERS)
    assert drift_reason(lost, [usual] * 3, DEVELOPER_FIELDS) == \
        "name, popular repository, repository description missing on all 25 rows"
    assert drift_reason(usual, [usual] * 3, DEVELOPER_FIELDS) is None
    assert parse_list_key(list_key("weekly", "rust", "", DEVELOPERS)) == \
        (DEVELOPERS, "weekly", "rust", "")


def _snapshot_line(page: str, observed_at: str, language: str = "") -> str:
    rows = developer_snapshot_rows(_parse(page))
    item = page_item(DEVELOPERS, observed_at=observed_at, period="daily", language=language,
                     spoken="", url=BASE, rows=rows, archive_sha256="0" * 64,
                     parser_version="1", parsed_at=observed_at)
    item.update(spider="trending", shard="0/1", collected_at=observed_at[:19] + "Z")
    return json.dumps(dict(item))


def test_catalog_keeps_developer_history_and_history_answers_for_a_login(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layout = DataLayout(tmp_path / "data")
    items = layout.items_dir("trending")
    items.mkdir(parents=True)
    # Two fetches of one page (stored once), then a later page of another generation.
    (items / "trending-0of1-a.jsonl").write_text(
        _snapshot_line("2021-04_all_daily", "2026-11-30T10:00:00.000Z") + "\n"
        + _snapshot_line("2021-04_all_daily", "2026-11-30T11:00:00.000Z") + "\n")
    (items / "trending-0of1-b.jsonl").write_text(
        _snapshot_line("2026-08_all_daily", "2026-12-01T10:00:00.000Z") + "\n")
    config = parse_config(f"data_dir: {layout.root}\n", "collector.yaml", tmp_path)
    result = build_catalog(layout, config)
    assert (result.files, result.lines, result.bad_lines) == (2, 3, 0)
    conn = sqlite3.connect(layout.catalog_db)
    try:
        assert conn.execute("SELECT count(*) FROM trending_developer_fetches").fetchone() == (3,)
        assert conn.execute("SELECT count(*) FROM trending_developer_pages").fetchone() == (2,)
        assert conn.execute("SELECT count(*) FROM trending_developer_observations"
                            ).fetchone() == (75,)
        assert conn.execute(
            "SELECT period, trending_language, first_seen, last_seen, observations, best_rank, "
            "repo_first, repo_last FROM trending_developer_history WHERE login = 'nunomaduro'"
        ).fetchall() == [("daily", "", "2026-11-30T10:00:00.000Z", "2026-11-30T11:00:00.000Z",
                          2, 1, "nunomaduro/larastan", "nunomaduro/larastan")]
        assert conn.execute("SELECT count(*) FROM trending_history").fetchone() == (0,)
    finally:
        conn.close()
    again = build_catalog(layout, config)
    assert again.files == 0

    from runner.cli.main import main

    assert main(["history", "nunomaduro", "--config", str(_config_file(tmp_path, layout))]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == "nunomaduro (Nuno Maduro), a developer, on GitHub trending developers: " \
                       "1 list"
    assert shown[2].split()[:2] == ["daily", "all"] and shown[2].endswith(" larastan")
    assert all(len(line) <= 80 for line in shown)
    assert main(["history", "Astro-Han", "--json", "--config",
                 str(_config_file(tmp_path, layout))]) == 0
    machine = json.loads(capsys.readouterr().out)
    assert machine["developer"] is True and machine["name"] == "AstroHan"
    assert machine["lists"][0]["repo_last"] == "Astro-Han/karpathy-llm-wiki"
    assert main(["history", "nobody-at-all", "--config", str(_config_file(tmp_path, layout))]) \
        == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "never seen on a trending developers list" in captured.err
    # A catalog built before the developer tables existed: one line saying what to do.
    conn = sqlite3.connect(layout.catalog_db)
    conn.execute("DROP TABLE trending_developer_history")
    conn.commit()
    conn.close()
    assert main(["history", "nunomaduro", "--config", str(_config_file(tmp_path, layout))]) \
        == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "run 'python -m runner catalog' once" \
        in captured.err


def _config_file(tmp_path: Path, layout: DataLayout) -> Path:
    path = tmp_path / "collector.yaml"
    path.write_text(f"data_dir: {layout.root}\n")
    return path


def test_feeds_name_each_developer_list_and_its_newcomers(tmp_path: Path) -> None:
    pytest.importorskip("feedgen")
    layout = DataLayout(tmp_path / "data")
    items = layout.items_dir("trending")
    items.mkdir(parents=True)
    (items / "trending-0of1-a.jsonl").write_text(
        _snapshot_line("2026-08_all_daily", "2026-12-01T10:00:00.000Z", "python") + "\n")
    config = parse_config(f"data_dir: {layout.root}\n", "collector.yaml", tmp_path)
    build_catalog(layout, config)
    feed = (layout.feeds_dir / "trending-developers-daily-python.atom").read_text()
    assert feed.count("<entry>") == 25
    assert "AstroHan (Astro-Han) is on daily trending developers, python (#1)" in feed
    assert "popular repo Astro-Han/karpathy-llm-wiki" in feed
    assert "no popular repository shown" in feed  # emontnemery's row


def test_reparse_cuts_an_archived_page_at_the_spiders_element_bound(tmp_path: Path) -> None:
    """A hostile archived page (a real one followed by 200,000 cells) is cut before the parser
    sees it, as the spider cuts it; the real rows before the cut are still read."""
    layout = DataLayout(tmp_path / "data")
    config = parse_config(
        f"data_dir: {layout.root}\nspiders:\n  trending:\n    settings:\n"
        "      TRENDING_PARSER: tests.support.parsers.broken.parse_recording_size\n",
        "collector.yaml", tmp_path)
    settings = trending_settings(config)
    limit = settings.getint("TRENDING_MAX_ELEMENTS")
    body = REPO_PAGE.read_bytes() + b"<td>x" * 200_000
    assert element_count(body) > 6 * limit
    archive = FilesystemPageArchive.at(layout, "trending")
    try:
        archive.put(ArchivedPage(url="https://github.com/trending/python?since=daily",
                                 observed_at="2026-12-01T10:00:00.000Z", status=200,
                                 sha256=body_sha256(body), list_key=list_key("daily",
                                                                             "python", ""),
                                 parser_version="0"), body)
        broken.LARGEST_INPUT.clear()
        read, changed, path = reparse(archive, settings, config, layout, None)
    finally:
        archive.close()
    assert (read, changed) == (1, 1) and path
    assert broken.LARGEST_INPUT and max(broken.LARGEST_INPUT) <= limit
    snapshot = json.loads(Path(path).read_text())
    assert len(snapshot["rows"]) == 20  # every row of the real page, before the cut


DEVELOPER_LISTS = {"languages": [""], "periods": ["daily"],
                   "developers": {"enabled": True, "languages": ["", "python"],
                                  "periods": ["daily"]}}
BROKEN_DEVELOPERS = {
    "TRENDING_DEVELOPERS_PARSER": "tests.support.parsers.broken.parse_developers_losing_fields"}


@pytest.mark.timeout(300)
def test_scrapy_crawl_collects_developer_lists_end_to_end(tmp_path: Path,
                                                         fake_github: Any) -> None:
    """Real processes: three rounds of ``scrapy crawl trending`` against the fake GitHub, the
    second with a developer parser that lost names and repositories (drift), then
    ``catalog``, ``reparse`` and ``history LOGIN``."""
    collector = Collector(tmp_path / "home")
    states = []
    for generation, settings in enumerate(({}, BROKEN_DEVELOPERS, {})):
        collector.configure(github=fake_github,
                            spiders={"trending": {**DEVELOPER_LISTS, "settings": settings}})
        fake_github.control(generation=generation)
        result = collector.crawl("trending", timeout=90)
        assert result.returncode == 0, result.stderr[-3000:]
        states.append(collector.worker_state("trending"))
    assert [s["drift_listings"] for s in states] == [0, 2, 0]
    assert "name, popular repository, repository description missing on all" \
        in states[1]["drift"]
    assert "/trending/developers" in states[1]["drift"]

    items = collector.items("trending")
    pages = [i for i in items if "developers" in i]
    assert len(pages) == 6 and {p["url"].split("?")[0].removeprefix(fake_github.url("web"))
                                for p in pages} == {"/trending/developers",
                                                    "/trending/developers/python"}
    assert all(len(p["developers"]) >= 22 and p["archive_sha256"] for p in pages)
    developer_rows = [i for i in items if "login" in i]
    assert developer_rows and all(i["period"] == "daily" for i in developer_rows)
    assert [i for i in items if "rows" in i]  # the repository list is collected beside them

    assert collector.runner("catalog").returncode == 0
    assert _fetches_without_names(collector) == 2  # the broken round's two pages
    fixed = collector.runner("reparse", "--spider", "trending")
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout.startswith("reparse: 9 archived pages read, 2 read differently -> ")
    again = collector.runner("reparse", "--spider", "trending")
    assert again.stdout == "reparse: 9 archived pages read, 0 read differently " \
                           "(nothing to write)\n"

    first = pages[0]["developers"][-1]  # on the list in every generation
    shown = collector.runner("history", first["login"], "--json")
    assert shown.returncode == 0, shown.stderr
    machine = json.loads(shown.stdout)
    assert machine["developer"] is True
    listed = {(r["period"], r["trending_language"]): r for r in machine["lists"]}
    row = listed[("daily", pages[0]["trending_language"] or "")]
    assert row["observations"] == 3  # the broken round's reading replaced by reparse
    assert row["repo_first"] == row["repo_last"] == first["repo_full_name"]
    assert _fetches_without_names(collector) == 0
    feeds = sorted(p.name for p in (collector.data_dir / "feeds").glob("trending-dev*"))
    assert feeds == ["trending-developers-daily-all.atom",
                     "trending-developers-daily-python.atom"]


def _fetches_without_names(collector: Collector) -> int:
    conn = sqlite3.connect(collector.data_dir / "catalog.sqlite")
    try:
        assert conn.execute("SELECT count(*) FROM trending_developer_fetches").fetchone() == (6,)
        return conn.execute(
            "SELECT count(*) FROM trending_developer_fetches f WHERE NOT EXISTS (SELECT 1 "
            "FROM trending_developer_page_rows r WHERE r.page_id = f.page_id "
            "AND r.name IS NOT NULL)").fetchone()[0]
    finally:
        conn.close()


def _archive(kind: str, tmp_path: Path) -> PageArchiveStorage:
    if kind == "memory":
        return MemoryPageArchive({})
    return FilesystemPageArchive.at(DataLayout(tmp_path / "data"), "trending")


@pytest.mark.parametrize("kind", ["filesystem", "memory"])
def test_every_page_archive_keeps_the_same_contract(kind: str, tmp_path: Path) -> None:
    archive = _archive(kind, tmp_path)
    key = list_key("daily", "", "", DEVELOPERS)
    body = (PAGES / "2021-04_all_daily.html").read_bytes()
    other = (PAGES / "2026-08_all_daily.html").read_bytes()

    def page(at: str, content: bytes, drifted: bool = False) -> ArchivedPage:
        return ArchivedPage(url=BASE, observed_at=at, status=200, sha256=body_sha256(content),
                            list_key=key, parser_version="1", drifted=drifted)

    try:
        assert isinstance(archive, PageArchiveStorage) and archive.up
        fetches = [page("2026-12-01T01:00:00.000Z", body), page("2026-12-01T02:00:00.000Z", body),
                   page("2026-12-01T03:00:00.000Z", other, drifted=True)]
        for fetch in fetches:
            archive.put(fetch, body if fetch.sha256 == body_sha256(body) else other)
        assert [p.observed_at for p in archive.pages()] == [f.observed_at for f in fetches]
        assert [archive.body(p) for p in archive.pages()] == [body, body, other]
        assert [p.observed_at for p in archive.pages("2026-12-01T02")] == \
            [f.observed_at for f in fetches[1:]]
        # The drifted fetch is never "the usual"; newest first.
        assert [p.observed_at for p in archive.recent(key, 3, "2026-12-02")] == \
            ["2026-12-01T02:00:00.000Z", "2026-12-01T01:00:00.000Z"]
        read_again = parse_profile(developer_snapshot_rows(parse_developers(other, BASE)),
                                   DEVELOPERS)
        archive.reparsed(dataclasses.replace(fetches[2], parser_version="2",
                                             profile=read_again, drifted=False))
        last = list(archive.pages())[-1]
        assert (last.parser_version, last.profile, last.drifted) == ("2", read_again, False)
        assert len(archive.recent(key, 3, "2026-12-02")) == 3
        assert archive.prune("2026-12-01T02:30:00.000Z") == 2
        assert [archive.body(p) for p in archive.pages()] == [other]
    finally:
        archive.close()


def test_the_spider_archives_into_whatever_store_its_setting_names(tmp_path: Path) -> None:
    crawler = project_crawler(
        TrendingSpider, COLLECTOR_DATA_DIR=str(tmp_path), GITHUB_WEB_URL="https://gh.test",
        TRENDING_ARCHIVE_STORAGE="scraper.trending.memoryarchive.MemoryPageArchive",
        MEMORY_STORAGE_SPACE="developers-archive")
    spider = crawler.spider
    url = "https://gh.test/trending/developers?since=daily"
    body = (PAGES / "2026-08_all_daily.html").read_bytes()
    items = list(spider.parse(HtmlResponse(url, body=body, request=Request(url))))
    assert isinstance(spider.archive, MemoryPageArchive)
    (archived,) = spider.archive.pages()
    assert spider.archive.body(archived) == body
    assert archived.list_key == list_key("daily", "", "", DEVELOPERS)
    assert archived.profile.rows == 25 and not (tmp_path / "archive").exists()
    assert items[0]["archive_sha256"] == archived.sha256 and len(items[0]["developers"]) == 25
    assert [i["login"] for i in items[1:]][:2] == ["Astro-Han", "lalalune"]
