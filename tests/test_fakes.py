"""The fake servers behave like the real services in the ways the crawler tests rely on."""

from __future__ import annotations

import gzip
import json
import math
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from email.message import Message
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.support.fakes.data import API_EXAMPLES
from tests.support.fakes.launcher import FakeServer, start_fake_docs, start_fake_github

EXAMPLE = API_EXAMPLES
EXAMPLE_SEARCH = EXAMPLE / "search_repositories_example.json"
LINK = re.compile(r'<([^>]+)>; rel="(\w+)"')
GITHUB_DEFAULTS = {"search": {"limit": 1000, "window": 60}, "core": {"limit": 1000, "window": 60}}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


# Tests look at raw statuses, so redirects are not followed and proxies never used.
_RAW = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
_FOLLOW = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch(
    url: str, headers: dict[str, str] | None = None, *, follow: bool = False
) -> tuple[int, Message, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with (_FOLLOW if follow else _RAW).open(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def links(headers: Message) -> dict[str, str]:
    return {rel: url for url, rel in LINK.findall(headers.get("Link", ""))}


def search_url(server: FakeServer, **params: Any) -> str:
    return f"{server.url('api')}/search/repositories?{urlencode(params)}"


@pytest.fixture(scope="module")
def github_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    server = start_fake_github(tmp_path_factory.mktemp("github"), search_limit=1000)
    yield server
    server.stop()
    assert server.returncode == 0  # SIGTERM is a clean exit


@pytest.fixture
def github(github_server: FakeServer) -> FakeServer:
    # One process for the module (startup costs ~0.3 s); every test starts from a clean state.
    github_server.control(
        reset_limits=True,
        limits=GITHUB_DEFAULTS,
        generation=0,
        latency_ms=0,
        jitter=0,
        rate_status=403,
        reset_stats=True,
    )
    return github_server


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    server = start_fake_docs(tmp_path_factory.mktemp("docs"), sites=2, pages=12)
    yield server
    server.stop()
    assert server.returncode == 0


@pytest.fixture
def docs(docs_server: FakeServer) -> FakeServer:
    docs_server.control(reset_stats=True, generation=0, latency_ms=0, reset_flaky=True)
    return docs_server


# ------------------------------------------------------------------------------ GitHub API


def test_link_paging_reaches_last_page_and_stops_at_1000(github: FakeServer) -> None:
    for per_page, pages, last_size in ((100, 10, 100), (None, 34, 10)):
        params = {"q": "huge language:python", "sort": "stars"}
        if per_page:
            params["per_page"] = per_page
        url: str | None = search_url(github, **params)
        seen: list[int] = []
        stars: list[int] = []
        while url:
            assert url.startswith(github.url("api") + "/search/repositories?")
            status, headers, body = fetch(url)
            assert status == 200, body
            data = json.loads(body)
            assert data["total_count"] == 5000 and data["incomplete_results"] is False
            seen += [item["id"] for item in data["items"]]
            stars += [item["stargazers_count"] for item in data["items"]]
            rels = links(headers)
            url = rels.get("next")
        assert len(seen) == 1000 == len(set(seen))
        assert len(data["items"]) == last_size
        assert stars == sorted(stars, reverse=True)
        assert "last" not in rels and rels["first"].endswith("&page=1")
        assert rels["prev"].endswith(f"&page={pages - 1}")

    _, headers, _ = fetch(search_url(github, q="huge", per_page=100))
    assert links(headers)["last"].endswith("&page=10")
    # GitHub's own format: original parameters in order, page appended, q form-encoded.
    assert headers["Link"] == (
        f'<{github.url("api")}/search/repositories?q=huge&per_page=100&page=2>; rel="next", '
        f'<{github.url("api")}/search/repositories?q=huge&per_page=100&page=10>; rel="last"'
    )
    _, headers, body = fetch(search_url(github, q="few things"))
    assert json.loads(body)["total_count"] == 7 and "Link" not in headers


def test_past_1000_results_is_422(github: FakeServer) -> None:
    for params in ({"per_page": 100, "page": 11}, {"page": 35}, {"per_page": 1, "page": 1001}):
        status, headers, body = fetch(search_url(github, q="huge", **params))
        assert status == 422
        assert json.loads(body)["message"] == "Only the first 1000 search results are available"
        assert headers["X-RateLimit-Resource"] == "search"
    assert fetch(search_url(github, q="huge", per_page=1, page=1000))[0] == 200


def test_items_have_githubs_field_set(github: FakeServer) -> None:
    example = json.loads(EXAMPLE_SEARCH.read_text())["items"][0]
    _, headers, body = fetch(search_url(github, q="some topic", per_page=100))
    data = json.loads(body)
    assert data["total_count"] == 250 and len(data["items"]) == 100
    for item in data["items"]:
        assert set(example) <= set(item)
        assert set(example["owner"]) <= set(item["owner"])
        assert isinstance(item["topics"], list)
        lic = item["license"]
        assert lic is None or {"key", "name", "spdx_id", "url", "node_id"} <= set(lic)
    assert headers["Content-Type"] == "application/json; charset=utf-8"
    # Deterministic in q; different queries overlap somewhat, like real search results.
    assert fetch(search_url(github, q="some topic", per_page=100))[2] == body
    _, _, other = fetch(search_url(github, q="other topic", per_page=100))
    assert [i["id"] for i in json.loads(other)["items"]] != [i["id"] for i in data["items"]]


@pytest.mark.parametrize("sort", ["stars", "forks", "updated"])
def test_sort_orders(github: FakeServer, sort: str) -> None:
    field = {"stars": "stargazers_count", "forks": "forks_count", "updated": "updated_at"}[sort]
    for order in ("desc", "asc"):
        _, _, body = fetch(search_url(github, q="sorting", sort=sort, order=order, per_page=50))
        values = [item[field] for item in json.loads(body)["items"]]
        assert values == sorted(values, reverse=order == "desc")


def test_etag_304_is_free_and_generation_changes_data(github: FakeServer) -> None:
    url = search_url(github, q="cached", sort="stars")
    status, headers, body = fetch(url)
    etag = headers["ETag"]
    assert status == 200 and re.fullmatch(r'"[0-9a-f]{40}"', etag)
    assert headers["X-RateLimit-Used"] == "1"
    for _ in range(3):
        status, headers, body304 = fetch(url, {"If-None-Match": etag})
        assert status == 304 and body304 == b""
        assert headers["X-RateLimit-Used"] == "1" and headers["X-RateLimit-Remaining"] == "999"

    github.control(generation=2)
    status, headers, new_body = fetch(url, {"If-None-Match": etag})
    assert status == 200 and headers["ETag"] != etag
    assert headers["X-RateLimit-Used"] == "2"
    old_items = {i["id"]: i["stargazers_count"] for i in json.loads(body)["items"]}
    new_items = {i["id"]: i["stargazers_count"] for i in json.loads(new_body)["items"]}
    assert any(new_items[k] > v for k, v in old_items.items() if k in new_items)
    assert github.stats()["status_counts"] == {"200": 2, "304": 3}


def test_primary_limit_per_identity_and_resource(github: FakeServer) -> None:
    github.control(limits={"search": {"limit": 5, "window": 2}})
    auth = {"Authorization": "Bearer alice"}
    url = search_url(github, q="limited")
    for expected_remaining in range(4, -1, -1):
        status, headers, _ = fetch(url, auth)
        assert status == 200 and headers["X-RateLimit-Remaining"] == str(expected_remaining)
    status, headers, body = fetch(url, auth)
    assert status == 403
    assert headers["X-RateLimit-Remaining"] == "0" and headers["X-RateLimit-Used"] == "5"
    assert json.loads(body)["message"].startswith("API rate limit exceeded")
    assert "documentation_url" in json.loads(body)
    reset = int(headers["X-RateLimit-Reset"])

    # Other identities and the core resource have budgets of their own.
    assert fetch(url, {"Authorization": "Bearer bob"})[0] == 200
    assert fetch(url)[0] == 200
    status, headers, _ = fetch(github.url("api") + "/redirect-to?url=http://x/", auth)
    assert status == 302 and headers["X-RateLimit-Resource"] == "core"

    _, rate_headers, rate_body = fetch(github.url("api") + "/rate_limit", auth)
    search = json.loads(rate_body)["resources"]["search"]
    assert search == {"limit": 5, "used": 5, "remaining": 0, "reset": search["reset"]}
    assert rate_headers["X-RateLimit-Resource"] == "core"

    time.sleep(max(0.0, reset - time.time()) + 0.05)
    status, headers, _ = fetch(url, auth)
    assert status == 200 and headers["X-RateLimit-Remaining"] == "4"
    assert int(headers["X-RateLimit-Reset"]) >= reset + 2
    stats = github.stats()
    assert stats["violations"] == 1 and stats["status_counts"]["403"] == 1

    github.control(rate_status=429, limits={"search": {"limit": 1, "window": 60}})
    assert fetch(url, auth)[0] == 200
    assert fetch(url, auth)[0] == 429


def test_exhaust_then_fresh_window(github: FakeServer) -> None:
    config = github.control(exhaust={"resource": "search", "reset_in": 1})
    assert "*|search" in config["exhausted"]
    status, headers, _ = fetch(search_url(github, q="x"), {"Authorization": "Bearer carol"})
    assert status == 403 and headers["X-RateLimit-Remaining"] == "0"
    reset = int(headers["X-RateLimit-Reset"])
    assert fetch(github.url("api") + "/rate_limit")[0] == 200  # never limited, never counted
    time.sleep(max(0.0, reset - time.time()) + 0.05)
    status, headers, _ = fetch(search_url(github, q="x"), {"Authorization": "Bearer carol"})
    assert status == 200 and headers["X-RateLimit-Remaining"] == "999"


def test_secondary_limit_with_retry_after(github: FakeServer) -> None:
    github.control(secondary={"resource": "search", "seconds": 1.5})
    status, headers, body = fetch(search_url(github, q="x"))
    assert status == 403
    assert json.loads(body)["message"].startswith("You have exceeded a secondary rate limit")
    retry_after = int(headers["Retry-After"])
    assert 1 <= retry_after <= 2
    assert "X-RateLimit-Remaining" in headers
    assert fetch(github.url("api") + "/redirect-to?url=http://x/")[0] == 302  # core unaffected
    time.sleep(retry_after + 0.05)
    assert fetch(search_url(github, q="x"))[0] == 200
    stats = github.stats()
    assert stats["secondary_violations"] == 1 and stats["violations"] == 0
    assert stats["secondary_ignored"] == 0


def test_web_secondary_limit(github: FakeServer) -> None:
    github.control(web_secondary={"seconds": 30, "status": 429})
    status, headers, body = fetch(github.url("web") + "/trending")
    assert status == 429 and int(headers["Retry-After"]) in (29, 30)
    assert b"You have exceeded a secondary rate limit" in body
    assert fetch(search_url(github, q="x"))[0] == 200  # the API is not affected
    time.sleep(1.1)  # past the grace for requests already in flight: this one ignored the pause
    assert fetch(github.url("web") + "/trending?since=weekly")[0] == 429
    github.control(web_secondary={"seconds": 0})
    assert fetch(github.url("web") + "/trending")[0] == 200
    stats = github.stats()
    assert stats["secondary_violations_by_app"] == {"api": 0, "web": 2}
    assert stats["secondary_violations"] == 2 and stats["secondary_ignored"] == 1


def test_bad_credentials_and_fault_queries(github: FakeServer) -> None:
    status, headers, body = fetch(search_url(github, q="x"), {"Authorization": "Bearer bad"})
    assert status == 401 and json.loads(body)["message"] == "Bad credentials"
    assert "X-RateLimit-Limit" in headers
    assert fetch(search_url(github, q="boom500"))[0] == 500
    status, _, body = fetch(search_url(github, q="badjson"))
    assert status == 200
    with pytest.raises(ValueError):
        json.loads(body)
    status, headers, body = fetch(search_url(github, q="htmlbody"))
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    status, _, body = fetch(search_url(github, q="empty"))
    assert json.loads(body) == {"total_count": 0, "incomplete_results": False, "items": []}
    assert fetch(search_url(github, q=""))[0] == 422


def test_redirect_to_and_auth_leak_detection(github: FakeServer) -> None:
    target = github.url("web") + "/trending"
    for app in ("api", "web"):
        status, headers, _ = fetch(f"{github.url(app)}/redirect-to?{urlencode({'url': target})}")
        assert status == 302 and headers["Location"] == target
    assert github.stats()["auth_seen_on_web"] == 0
    # urllib re-sends Authorization to the other host: exactly what the fake must expose.
    url = f"{github.url('api')}/redirect-to?{urlencode({'url': target})}"
    status, _, body = fetch(url, {"Authorization": "Bearer secret"}, follow=True)
    assert status == 200 and b"Box-row" in body
    stats = github.stats()
    assert stats["auth_seen_on_web"] == 1
    web_hits = [r for r in stats["requests"] if r["app"] == "web" and r["path"] == "/trending"]
    assert web_hits[-1]["auth"] is True and web_hits[-1]["resource"] is None


def test_trending_serves_all_fixtures_deterministically(github: FakeServer) -> None:
    fixtures = EXAMPLE.parent / "trending"
    rows = {f.name: f.read_bytes().count(b"Box-row") for f in fixtures.glob("*.html")}
    served: dict[str, bytes] = {}
    for lang in ("", "/python", "/rust", "/javascript", "/go"):
        for since in ("daily", "weekly", "monthly"):
            status, headers, body = fetch(f"{github.url('web')}/trending{lang}?since={since}")
            assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
            name = headers["X-Fake-Fixture"]
            assert body == (fixtures / name).read_bytes()
            served[name] = body
    assert set(served) == set(rows) and sorted(rows.values()) == [20, 25, 25]
    first = fetch(github.url("web") + "/trending/python?since=weekly")
    again = fetch(github.url("web") + "/trending/python?since=weekly")
    assert first[2] == again[2]
    assert fetch(github.url("web") + "/nope")[0] == 404


def test_stats_shape_and_concurrency(github: FakeServer) -> None:
    fetch(search_url(github, q="a b"), {"Authorization": "Bearer dave"})
    fetch(github.url("web") + "/trending?since=daily")
    github.stats()  # /_stats and /_control are never recorded
    stats = github.stats()
    assert stats["counts"] == {"/search/repositories?q=a+b": 1, "/trending?since=daily": 1}
    api, web = stats["requests"]
    assert api["app"] == "api" and api["resource"] == "search" and api["auth"] is True
    assert api["identity"] == "Bearer dave" and api["method"] == "GET"
    assert api["query"] == "q=a+b" and api["status"] == 200 and api["t"] <= web["t"]
    assert web["app"] == "web" and web["auth"] is False and web["identity"] == "127.0.0.1"

    github.control(latency_ms=300, jitter=0.1, reset_stats=True)
    threads = [
        threading.Thread(target=fetch, args=(search_url(github, q=f"c{i}"),)) for i in range(6)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert time.monotonic() - started >= 0.25
    stats = github.stats()
    assert stats["max_concurrency"] >= 4 and stats["max_concurrency_by_app"]["api"] >= 4


@pytest.mark.parametrize("fake_github", [{"rate_status": 429, "search_limit": 1}], indirect=True)
def test_fixture_options_reach_the_cli(fake_github: FakeServer) -> None:
    assert fake_github.control()["rate_status"] == 429
    assert fetch(search_url(fake_github, q="x"))[0] == 200
    status, headers, _ = fetch(search_url(fake_github, q="x"))
    assert status == 429 and headers["X-RateLimit-Limit"] == "1"


def test_control_rejects_unknown_keys(github: FakeServer) -> None:
    with pytest.raises(RuntimeError, match="unknown control keys"):
        github.control(limitz={})


# ------------------------------------------------------------------------------ docs host


def test_docs_mirrors_are_byte_identical(docs: FakeServer) -> None:
    bodies = {fetch(f"{docs.url()}/site1/{p}")[2] for p in ("", "index.html", "page0.html")}
    assert len(bodies) == 1
    assert fetch(f"{docs.url()}/site1/page1.html")[2] not in bodies
    assert fetch(f"{docs.url()}/site0/page0.html")[2] not in bodies


def test_docs_page_content_and_links(docs: FakeServer) -> None:
    status, headers, body = fetch(f"{docs.url()}/site0/page3.html")
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
    text = body.decode("utf-8")
    assert 5000 < len(body) < 9000
    for needle in ("<title>", "<nav", "<main>", "<h1>", "<h2", "<h3>", "<footer>", "<script>"):
        assert needle in text
    assert "naïve café — ünïcode" in text and "&amp;" in text and "&lt;" in text
    hrefs = re.findall(r'href="([^"]+)"', text)
    assert "page4.html" in hrefs and "/site0/page10.html" in hrefs
    assert f"{docs.url()}/site0/page6.html" in hrefs and "./page2.html#section-2" in hrefs
    for href in ("private/secret.html", "/outside.html", "/site1/index.html"):
        assert href in hrefs
    assert "http://127.0.0.9:9/elsewhere.html" in hrefs and "mailto:docs@example.com" in hrefs
    assert fetch(f"{docs.url()}/site0/files/manual.pdf")[2].startswith(b"%PDF-")
    status, headers, png = fetch(f"{docs.url()}/site0/img/diagram.png")
    assert status == 200 and headers["Content-Type"] == "image/png" and png[:4] == b"\x89PNG"
    assert fetch(f"{docs.url()}/site0/page12.html")[0] == 404
    assert fetch(f"{docs.url()}/site2/")[0] == 404


def test_docs_every_page_reachable_from_index(docs: FakeServer) -> None:
    seen: set[str] = set()
    queue = [f"{docs.url()}/site0/index.html"]
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        seen.add(url)
        _, _, body = fetch(url)
        for href in re.findall(r'href="(?:\./)?(page\d+\.html)', body.decode()):
            queue.append(f"{docs.url()}/site0/{href}")
    pages = {url.rsplit("/", 1)[1] for url in seen}
    assert {f"page{i}.html" for i in range(12)} <= pages


def test_docs_flaky_robots_gzip_generation(docs: FakeServer) -> None:
    index = fetch(f"{docs.url()}/site0/")[2]
    assert b'href="flaky.html"' in index
    assert fetch(f"{docs.url()}/site0/flaky.html")[0] == 500
    assert fetch(f"{docs.url()}/site0/flaky.html")[0] == 200
    assert fetch(f"{docs.url()}/site1/flaky.html")[0] == 500  # per URL

    status, _, robots = fetch(f"{docs.url()}/robots.txt")
    assert status == 200
    assert robots.decode().splitlines() == [
        "User-agent: *",
        "Disallow: /site0/private/",
        "Disallow: /site1/private/",
    ]

    status, headers, body = fetch(f"{docs.url()}/site0/page2.html", {"Accept-Encoding": "gzip"})
    assert headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(body) == fetch(f"{docs.url()}/site0/page2.html")[2]

    docs.control(generation=1)
    changed = fetch(f"{docs.url()}/site0/")[2]
    assert changed != index and changed == fetch(f"{docs.url()}/site0/page0.html")[2]


def test_docs_stats(docs: FakeServer) -> None:
    fetch(f"{docs.url()}/site0/page3.html", {"Authorization": "Bearer nope"})
    fetch(f"{docs.url()}/site0/page3.html")
    fetch(f"{docs.url()}/missing")
    stats = docs.stats()
    assert stats["counts"] == {"/site0/page3.html": 2, "/missing": 1}
    assert stats["total"] == 3 and stats["auth_seen"] == 1
    assert [(r["path"], r["status"], r["auth"]) for r in stats["requests"]] == [
        ("/site0/page3.html", 200, True),
        ("/site0/page3.html", 200, False),
        ("/missing", 404, False),
    ]
    assert math.isclose(stats["requests"][0]["t"], time.time(), abs_tol=5)


def test_fake_dies_loudly_on_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="exited with 2"):
        start_fake_docs(tmp_path, sites=0)
