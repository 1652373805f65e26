"""The ``trending`` and ``search`` spiders against the fakes: their rules in real crawls in this
process (tests/support/incrawler.py); the token's path through the real ``scrapy crawl`` processes.

Where the fake GitHub does not offer something (it does not record request headers, and a
correct client never makes it answer 422), a small scripted loopback server stands in for the
API or web host: it records every request with its headers and answers from a script.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

import pytest

from scraper.items import SearchRepoItem, TrendingRepoItem, content_hash
from scraper.trending.repositories import parse_trending
from tests.support.collector import Collector
from tests.support.incrawler import crawl_round
from tests.support.scripted import EXAMPLE_SEARCH, Scripted

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
TOKEN = "secret-token"
TRENDING_FIELDS = {"full_name", "owner", "name", "url", "description", "language", "stars",
                   "forks", "period_stars", "period", "trending_language", "rank", "built_by",
                   "spoken_language_code", "spider", "shard", "collected_at", "content_hash"}
SNAPSHOT_FIELDS = {"observed_at", "period", "trending_language", "url", "rows", "spider", "shard",
                   "spoken_language_code", "archive_sha256", "parser_version", "parsed_at",
                   "collected_at", "content_hash"}
ISO_UTC_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
SEARCH_FIELDS = {"id", "full_name", "html_url", "description", "language", "stargazers_count",
                 "forks_count", "open_issues_count", "topics", "license", "created_at",
                 "updated_at", "pushed_at", "archived", "query", "slice", "spider", "shard",
                 "collected_at", "content_hash"}
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# The fake API's limits, generous so the shared GitHub budget never makes a test wait, and the
# same numbers as the config's first guess (before any answer the budget paces by the guess).
FAKE_LIMITS = {"search_limit": 1000, "core_limit": 5000, "core_window": 60}
LIMITS = {"search": {"limit": 1000, "window": 60}, "core": {"limit": 5000, "window": 60}}


def fetch(url: str) -> bytes:
    with _NO_PROXY.open(url, timeout=10) as response:
        return response.read()


# --- a scripted loopback server -----------------------------------------------------------------


class Hosts:
    """What :meth:`Collector.configure` reads from a fake server: ``url("web")``, ``url("api")``."""

    def __init__(self, web: str, api: str) -> None:
        self.urls = {"web": web, "api": api}

    def url(self, app: str) -> str:
        return self.urls[app]


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    server = Scripted()
    try:
        yield server
    finally:
        server.close()


def search_requests(github) -> list[dict[str, Any]]:
    rows = []
    for r in github.stats()["requests"]:
        if r["path"] == "/search/repositories":
            rows.append({**r, "params": {k: v[0] for k, v in parse_qs(r["query"]).items()}})
    return rows


def configure(collector: Collector, github: Any, **kwargs: Any) -> None:
    collector.configure(github=github, **kwargs)
    collector.update_config({"github": {"limits": LIMITS}})


def crawl_ok(collector: Collector, spider: str, **settings: Any) -> dict[str, Any]:
    return crawl_round(spider, collector.config_path, settings=settings)


# --- trending -----------------------------------------------------------------------------------


@pytest.mark.timeout(90)
def test_trending_items_have_every_field(collector: Collector, fake_github) -> None:
    languages, periods = ["", "python"], ["daily", "weekly"]
    configure(collector, fake_github, spiders={"trending": {"languages": languages,
                                                                  "periods": periods}})
    stats = crawl_ok(collector, "trending")
    written = collector.items("trending")
    assert not stats.get("log_count/ERROR")
    assert stats["item_scraped_count"] == len(written)
    snapshots = [item for item in written if "rows" in item]
    items = [item for item in written if "rows" not in item]

    web = fake_github.url("web")
    by_entry: dict[tuple, list[dict]] = defaultdict(list)
    for item in items:
        assert set(item) == TRENDING_FIELDS, set(item) ^ TRENDING_FIELDS
        assert item["spider"] == "trending" and item["shard"] == "0/1"
        assert ISO_UTC.match(item["collected_at"]), item["collected_at"]
        assert re.fullmatch(r"[0-9a-f]{64}", item["content_hash"])
        for count in ("stars", "forks", "period_stars", "rank"):
            assert type(item[count]) is int, (count, item[count])
        assert item["full_name"] == f"{item['owner']}/{item['name']}"
        assert item["url"] == f"{web}/{item['full_name']}"
        assert isinstance(item["built_by"], list)
        assert all(isinstance(login, str) and login for login in item["built_by"])
        assert item["description"] is None or (item["description"] and
                                                item["description"] == item["description"].strip())
        by_entry[(item["trending_language"], item["period"])].append(item)
    assert set(by_entry) == {(lang, period) for lang in languages for period in periods}

    # Each entry's items are exactly the rows of the page the fake served for it, in order.
    for (language, period), got in by_entry.items():
        path = f"/trending/{language}" if language else "/trending"
        rows = parse_trending(fetch(f"{web}{path}?since={period}"), web)
        assert rows, (language, period)
        expected = [(r.rank, r.full_name, r.description, r.language, r.stars, r.forks,
                     r.period_stars, r.built_by) for r in rows]
        assert [(i["rank"], i["full_name"], i["description"], i["language"], i["stars"],
                 i["forks"], i["period_stars"], i["built_by"]) for i in got] == expected
        # …and the page's snapshot holds the same rows, once.
        (snapshot,) = [s for s in snapshots if (s["trending_language"], s["period"]) ==
                       (language, period)]
        assert set(snapshot) == SNAPSHOT_FIELDS
        assert [(r["rank"], r["full_name"], r["description"], r["language"], r["stars"],
                 r["forks"], r["period_stars"], r["built_by"]) for r in snapshot["rows"]] \
            == expected
        assert ISO_UTC_MS.match(snapshot["observed_at"]), snapshot["observed_at"]


@pytest.mark.timeout(60)
def test_trending_page_with_zero_rows_is_an_error_naming_the_url(collector: Collector,
                                                                 scripted: Scripted,
                                                                 caplog) -> None:
    configure(collector, Hosts(scripted.url, scripted.url),
                        spiders={"trending": {"languages": ["rust"], "periods": ["monthly"]}})
    stats = crawl_ok(collector, "trending")
    url = f"{scripted.url}/trending/rust?since=monthly"
    assert [r["path"] for r in scripted.of("/trending/rust")] == ["/trending/rust"]
    assert stats["trending/empty_pages"] == 1
    assert stats["log_count/ERROR"] >= 1
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert any(url in line for line in errors), errors
    assert collector.items("trending") == []
    assert collector.worker_state("trending")["last_error"]


def test_content_hash_ignores_collected_at_rank_and_shard() -> None:
    """Two runs in the same second would not show it end to end: checked on the items."""
    row = {"full_name": "o/r", "owner": "o", "name": "r", "url": "https://github.com/o/r",
           "description": None, "language": "Go", "stars": 5, "forks": 1, "period_stars": 2,
           "period": "daily", "trending_language": None, "built_by": ["o"]}
    a = TrendingRepoItem(**row, rank=1, shard="0/1", spider="trending",
                         collected_at="2026-01-01T00:00:00Z")
    b = TrendingRepoItem(**row, rank=7, shard="1/4", spider="trending",
                         collected_at="2026-06-30T12:00:00Z")
    assert content_hash(a) == content_hash(b)
    # All languages is '' now, null before: the same content, not written again on upgrade.
    assert content_hash(TrendingRepoItem(**{**row, "trending_language": ""})) == content_hash(a)
    for field, value in (("stars", 6), ("period", "weekly"), ("trending_language", "go"),
                         ("description", "x"), ("built_by", [])):
        assert content_hash(TrendingRepoItem(**{**row, field: value})) != content_hash(a), field
    search = {"query": "q", "id": 1, "full_name": "o/r", "stargazers_count": 3}
    assert content_hash(SearchRepoItem(**search, collected_at="x", shard="0/1")) == \
        content_hash(SearchRepoItem(**search, collected_at="y", shard="1/2"))
    assert content_hash(SearchRepoItem(**search)) != content_hash(
        SearchRepoItem(**{**search, "query": "other"}))


# --- search -------------------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_search_follows_link_next_to_the_end_and_never_past_1000(collector: Collector,
                                                                 fake_github_factory) -> None:
    github = fake_github_factory(**FAKE_LIMITS)
    # complete: false, GitHub's cap as it is (tests/e2e/test_search_complete.py goes past it).
    configure(collector, github, spiders={"search": {"queries": ["few", "alpha", "huge"],
                                                     "per_page": 100, "complete": False}})
    stats = crawl_ok(collector, "search")
    requests = search_requests(github)
    pages: dict[str, list[int]] = defaultdict(list)
    for r in requests:
        assert r["status"] == 200, r
        assert not r["auth"]  # no token in the environment: anonymous
        params = r["params"]
        assert (params["sort"], params["order"], params["per_page"]) == ("stars", "desc", "100")
        pages[params["q"]].append(int(params.get("page", "1")))
    assert sorted(pages["few"]) == [1]
    assert sorted(pages["alpha"]) == [1, 2, 3]
    assert sorted(pages["huge"]) == list(range(1, 11))  # 10 × 100 = result 1000, no page 11

    items = collector.items("search")
    per_query: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        per_query[item["query"]].append(item)
    assert {q: len(v) for q, v in per_query.items()} == {"few": 7, "alpha": 250, "huge": 1000}
    assert stats["item_scraped_count"] == 1257
    assert not stats.get("log_count/ERROR") and not stats.get("log_count/WARNING")
    for got in per_query.values():
        stars = [item["stargazers_count"] for item in got]
        assert stars == sorted(stars, reverse=True)  # pages in order, as served (sort=stars)
        assert len({item["id"] for item in got}) == len(got)

    # The items are GitHub's fields of what the API served, license as its SPDX id.
    api = github.url("api")
    served = json.loads(fetch(f"{api}/search/repositories?"
                              + urlencode({"q": "few", "sort": "stars", "order": "desc",
                                           "per_page": 100})))["items"]
    assert [item["id"] for item in per_query["few"]] == [repo["id"] for repo in served]
    for item, repo in zip(per_query["few"], served, strict=True):
        assert set(item) == SEARCH_FIELDS, set(item) ^ SEARCH_FIELDS
        for key in SEARCH_FIELDS - {"license", "query", "slice", "spider", "shard",
                                    "collected_at", "content_hash"}:
            assert item[key] == repo[key], key
        assert item["license"] == (repo["license"] or {}).get("spdx_id")
        assert item["spider"] == "search" and item["shard"] == "0/1" and item["slice"] is None
        assert ISO_UTC.match(item["collected_at"])
    licenses = {item["license"] for item in items}
    assert licenses <= {"MIT", "Apache-2.0", "GPL-3.0", "BSD-3-Clause", "NOASSERTION", None}
    assert len(licenses - {None}) >= 3


@pytest.mark.timeout(60)
def test_search_headers_422_cap_and_githubs_example(collector: Collector, scripted: Scripted,
                                                    caplog) -> None:
    configure(collector, Hosts(scripted.url, scripted.url),
                        spiders={"search": {"queries": ["capped", "example", "endless"],
                                            "per_page": 30, "sort": "updated"}})
    stats = crawl_ok(collector, "search")
    requests = scripted.of("/search/repositories")
    pages: dict[str, list[int]] = defaultdict(list)
    for r in requests:
        pages[r["query"]["q"]].append(int(r["query"].get("page", "1")))
    assert pages["capped"] == [1, 2]
    assert pages["example"] == [1]
    # Results 990..1019 would be page 34 at 30 a page: page 34 is the last one asked for.
    assert pages["endless"] == list(range(1, 35))
    for r in requests:
        headers = {k.lower(): v for k, v in r["headers"].items()}
        assert headers["accept"] == "application/vnd.github+json"
        assert headers["x-github-api-version"] == "2022-11-28"
        assert "hubcollect" in headers["user-agent"]
        assert "authorization" not in headers
        assert r["query"]["sort"] == "updated" and r["query"]["order"] == "desc"
        assert r["query"]["per_page"] == "30"

    # The 422 ended its query with one warning, no error; the other query was not affected.
    assert stats["search/unprocessable"] == 1
    assert not stats.get("log_count/ERROR")
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len([w for w in warnings if "'capped'" in w and "422" in w]) == 1, warnings

    # GitHub's documented example body parses: one item per query.
    example = json.loads(EXAMPLE_SEARCH.read_text())["items"][0]
    items = collector.items("search")
    # The same repository on every page of "endless": one item for it.
    assert sorted(item["query"] for item in items) == ["capped", "endless", "example"]
    for item in items:
        assert set(item) == SEARCH_FIELDS
        assert item["id"] == example["id"] and item["full_name"] == example["full_name"]
        assert item["license"] == example["license"]["spdx_id"] == "MIT"
        assert item["archived"] is example["archived"]
        assert item["topics"] == []
        assert item["stargazers_count"] == example["stargazers_count"]
    assert len({item["content_hash"] for item in items}) == 3  # the query is content


@pytest.mark.timeout(120)
def test_search_second_run_dropped_until_content_changes(collector: Collector,
                                                         fake_github_factory) -> None:
    github = fake_github_factory(**FAKE_LIMITS)
    configure(collector, github, spiders={"search": {"queries": ["few", "alpha"]}})
    first = crawl_ok(collector, "search")
    files = collector.items_by_file("search")
    assert first["item_scraped_count"] == 257

    # Pages asked again unconditionally (no If-None-Match): the same repositories come back
    # and the content hash drops every one.
    second = crawl_ok(collector, "search", BUDGET_CONDITIONAL=False)
    assert second["contenthash/dropped"] == 257
    assert not second.get("item_scraped_count")
    assert collector.items_by_file("search") == files

    # However the pages are asked (by default with the ETag last seen), nothing new is written.
    third = crawl_ok(collector, "search")
    assert not third.get("item_scraped_count")
    assert collector.items_by_file("search") == files

    github.control(generation=1)  # every repository's counts change
    fourth = crawl_ok(collector, "search")
    assert fourth["item_scraped_count"] == 257
    assert not fourth.get("contenthash/dropped")
    new_files = collector.items_by_file("search")
    assert len(new_files) == len(files) + 1
    old_hashes = {i["content_hash"] for rows in files.values() for i in rows}
    (new_name,) = set(new_files) - set(files)
    assert old_hashes.isdisjoint(i["content_hash"] for i in new_files[new_name])


# --- the token ------------------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_token_goes_to_the_api_host_only_and_is_never_written(
        tmp_path: Path, fake_github_factory, fake_docs_factory, scripted: Scripted) -> None:
    github = fake_github_factory(**FAKE_LIMITS)
    docs = fake_docs_factory(sites=2, pages=5)
    web, api, docs_url = github.url("web"), github.url("api"), docs.url()

    def via_api(target: str) -> str:
        return f"{api}/redirect-to?{urlencode({'url': target})}"

    main = Collector(tmp_path / "main")
    configure(main, github, spiders={
        "trending": {"languages": ["python"], "periods": ["daily"]},
        "search": {"queries": ["few"]},
        # Start URLs on the API host that redirect to the docs host and to the web host.
        "docs": {"start_urls": [via_api(f"{docs_url}/site0/"),
                                via_api(f"{web}/trending?since=weekly"),
                                f"{docs_url}/site1/"]},
    })
    # An API whose search redirects to another host.
    moved = Collector(tmp_path / "moved")
    configure(moved, Hosts(web, scripted.url), spiders={"search": {"queries": ["moved"]}})
    scripted.redirect_to = f"{web}/trending?since=monthly"

    debug = ("-s", "LOG_LEVEL=DEBUG")
    procs = [main.start_crawl_args(spider, None, *debug, env=main.env(GITHUB_TOKEN=TOKEN))
             for spider in ("trending", "search", "docs")]
    procs.append(moved.start_crawl_args("search", None, *debug,
                                        env=moved.env(GITHUB_TOKEN=TOKEN)))
    for result in Collector.wait_all(procs):
        assert result.returncode == 0, (result.args, result.stderr[-3000:])
        assert TOKEN not in result.stdout + result.stderr

    stats = github.stats()
    api_requests = [r for r in stats["requests"] if r["app"] == "api"]
    web_requests = [r for r in stats["requests"] if r["app"] == "web"]
    # The API host saw the token on every search request; the docs spider's requests to it (the
    # redirects of its start URLs) carry none: only the search spider sends the token.
    assert {r["path"] for r in api_requests} >= {"/search/repositories", "/redirect-to"}
    searches = [r for r in api_requests if r["path"] == "/search/repositories"]
    assert all(r["auth"] and r["identity"] == f"Bearer {TOKEN}" for r in searches), [
        (r["path"], r["auth"]) for r in searches if not r["auth"]]
    assert not any(r["auth"] for r in api_requests if r["path"] == "/redirect-to")
    # The web host never did: neither the trending pages nor the redirected requests.
    web_paths = [(r["path"], r["query"]) for r in web_requests]
    assert ("/trending/python", "since=daily") in web_paths
    assert ("/trending", "since=weekly") in web_paths  # docs: API → web
    assert ("/trending", "since=monthly") in web_paths  # search: API → web
    assert stats["auth_seen_on_web"] == 0
    assert not any(r["auth"] for r in web_requests)
    # Nor the docs host, also when reached through a redirect from the API.
    docs_stats = docs.stats()
    assert "/site0/" in {r["path"] for r in docs_stats["requests"]}
    assert docs_stats["auth_seen"] == 0
    # The scripted API host got the token; its redirect target did not (counted above).
    (moved_request,) = scripted.of("/search/repositories")
    assert moved_request["headers"].get("Authorization") == f"Bearer {TOKEN}"

    # Never written anywhere under either data dir: logs, items, state, stores.
    for home in (main, moved):
        files = [p for p in home.data_dir.rglob("*") if p.is_file()]
        assert any(p.suffix == ".log" for p in files)
        for path in files:
            assert TOKEN.encode() not in path.read_bytes(), path
        assert "DEBUG" in home.log("search")
    assert main.items("search") and main.items("trending")
