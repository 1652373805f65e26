"""Hostile servers: every bad answer is a counted, logged error and the worker carries on.

The real ``scrapy crawl`` (exactly what a runner worker runs) against
tests/support/fakes/hostile.py: a
docs site whose index links to a 5xx storm, a connection reset, a response that never finishes,
100 MB bodies, broken gzip, a gzip bomb, a redirect loop, an endless redirect chain and a
redirect to another host, next to good pages; and a search API answering invalid JSON, HTML,
``"items": null``, non-object results, an unusable ``Link``, a 503 storm, resets and broken gzip.
The user's knobs are set as a user would: the spider's ``settings:`` map in collector.yaml.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.support.collector import (
    MEMORY_CEILING_MB,
    Collector,
    error_lines,
    generous_budget,
    mentions,
    run_watched,
)
from tests.support.fakes.hostile import (
    API_QUERIES,
    GOOD_PAGES,
    HOSTILE_PAGES,
    LIST_ITEMS,
    NESTED_TEXT,
    TRENDING_FLOOD_ROWS,
)

MB = 1024 * 1024
MAXSIZE = 2 * MB  # the docs spider's DOWNLOAD_MAXSIZE (spiders/docs.py)
TIMEOUT_S = 3
RETRIES = 2


@pytest.mark.timeout(120)
def test_docs_crawl_survives_every_hostile_page(collector: Collector, fake_hostile: Any) -> None:
    site = f"{fake_hostile.url()}/site/"
    collector.configure(docs_urls=[site + "index.html"], spiders={"docs": {"settings": {
        "DOWNLOAD_TIMEOUT": TIMEOUT_S, "RETRY_TIMES": RETRIES, "WORKER_STATE_INTERVAL": 1,
        # scraper/settings.py's backoff, which tests/support/collector.py shortens for the other
        # tests
        "RETRY_BACKOFF_BASE": 1.0}}})
    status, took, peak_mb = run_watched(collector, "docs", timeout=90)
    log = collector.log("docs")
    stats = collector.stats("docs")
    served = fake_hostile.stats()
    counts, sent = served["counts"], served["bytes_sent"]

    # The worker carried on: exit 0, bounded time, every good page collected, nothing else.
    assert status == 0, log[-3000:]
    # hang.html: 3 attempts × 3 s timeout + 1 s + 2 s backoff is the critical path.
    assert took < 60
    assert stats.get("finish_reason") == "finished"
    urls = sorted(item["url"] for item in collector.items("docs"))
    assert urls == sorted([site + "index.html", *(site + page for page in GOOD_PAGES)])
    assert "Traceback" not in log and "Spider error" not in log, log[-3000:]
    assert "Error downloading" not in log  # Scrapy's multi-line form: every failure is one line

    # One ERROR line per hostile page, naming it; no ERROR line about a good page.
    errors = error_lines(log)
    for page in HOSTILE_PAGES:
        about = [line for line in errors if mentions(line, site + page)]
        assert len(about) == 1, (page, about)
    assert len(errors) == len(HOSTILE_PAGES), "\n".join(errors)
    assert stats["log_count/ERROR"] == len(HOSTILE_PAGES)

    # 5xx storm: retried RETRY_TIMES with backoff (1 s, then 2 s), then one "Gave up" line.
    assert counts["/site/storm.html"] == RETRIES + 1
    hits = served["times"]["/site/storm.html"]
    gaps = [b - a for a, b in itertools.pairwise(hits)]
    assert gaps[0] >= 0.9 and gaps[1] >= 1.8, gaps
    assert stats["retry/reason_count/503 Service Unavailable"] == RETRIES
    assert stats["httperror/response_ignored_status_count/503"] == 1
    assert [line for line in errors if "Gave up retrying" in line and "storm.html" in line]
    assert stats["retry/max_reached"] == 3  # storm, reset, hang

    # Connection reset mid-headers, and a response that never finishes: retried, given up.
    assert counts["/site/reset.html"] == RETRIES + 1
    assert counts["/site/hang.html"] == RETRIES + 1
    assert stats["downloader/exception_type_count/scrapy.exceptions.DownloadFailedError"] == 3
    # hang.html's three; on a loaded machine a huge page may also pass the timeout before its
    # size cap, and is retried (it still ends in its one ERROR line, counted above).
    assert stats["downloader/exception_type_count/scrapy.exceptions.DownloadTimeoutError"] >= 3
    assert stats["docs/failed_requests/scrapy.exceptions.DownloadFailedError"] == 1
    assert stats["docs/failed_requests/scrapy.exceptions.DownloadTimeoutError"] == 1
    assert f"took longer than {TIMEOUT_S:.1f} seconds" in log

    # 100 MB bodies: cut at the docs spider's DOWNLOAD_MAXSIZE, with and without
    # Content-Length, memory sane.
    assert f"larger than download max size ({MAXSIZE})" in log
    assert log.count(f"larger than download max size ({MAXSIZE})") >= 2
    assert stats["docs/failed_requests/scrapy.exceptions.DownloadCancelledError"] == 2
    assert sent["/site/huge.html"] < 2 * MAXSIZE  # refused on its Content-Length
    assert sent["/site/huge-stream.html"] < 16 * MB  # cut soon after 2 MB arrived
    print(f"\nhostile docs crawl: {took:.1f}s, peak RSS {peak_mb:.0f} MB, "
          f"huge.html {sent['/site/huge.html'] / MB:.1f} MB sent, huge-stream.html "
          f"{sent['/site/huge-stream.html'] / MB:.1f} MB sent")
    assert peak_mb < MEMORY_CEILING_MB, f"peak RSS {peak_mb:.0f} MB"
    assert stats["memusage/max"] < MEMORY_CEILING_MB * MB
    assert collector.worker_state("docs")["uss_mb"] < MEMORY_CEILING_MB

    # Broken gzip and a gzip bomb: one counted failure each.
    assert stats["docs/failed_requests/zlib.error"] == 1
    assert stats["docs/failed_requests/scrapy.exceptions.IgnoreRequest"] == 1
    assert "exceeded DOWNLOAD_MAXSIZE" in log

    # Redirect loop and endless chain: stopped, counted, logged.
    assert stats["redirect/loop"] == 1
    assert stats["redirect/max_reached"] == 1
    # Each loop page once, but for a timeout on a loaded machine (hang.html's three are
    # expected; a loopback answer slower than DOWNLOAD_TIMEOUT is retried like any other).
    late = stats["downloader/exception_type_count/scrapy.exceptions.DownloadTimeoutError"] - 3
    loop = (counts["/site/loop-a.html"], counts["/site/loop-b.html"])
    assert min(loop) >= 1 and sum(loop) <= 2 + late, (loop, late)
    chain = [key for key in counts if key.startswith("/site/chain/")]
    assert len(chain) == 11  # REDIRECT_MAX_TIMES = 10 redirects followed, then refused

    # A redirect to another host: not collected as this site's page, counted, logged.
    assert stats["docs/offsite_redirects"] == 1
    assert not any(fake_hostile.url("other") in url for url in urls)

    # Every failure is in the per-spider count.
    assert stats["docs/failed_requests"] == len(HOSTILE_PAGES) - 2  # not storm, not offsite


@pytest.mark.timeout(90)
def test_search_crawl_survives_bad_api_answers(collector: Collector, fake_hostile: Any) -> None:
    collector.configure(spiders={"search": {
        "queries": list(API_QUERIES), "per_page": 4,  # scalaritems answers four results
        "settings": {"DOWNLOAD_TIMEOUT": TIMEOUT_S, "RETRY_TIMES": RETRIES}}})
    generous_budget(collector, web_url=fake_hostile.url(), web_min_interval=0,
                    api_url=f"{fake_hostile.url()}/api")
    status, took, _ = run_watched(collector, "search", timeout=60)
    log = collector.log("search")
    stats = collector.stats("search")

    assert status == 0, log[-3000:]
    assert took < 45
    assert "Traceback" not in log and "Spider error" not in log, log[-3000:]
    assert "Error downloading" not in log
    names = sorted(item["full_name"] for item in collector.items("search"))
    # good: both pages; scalaritems: its one real object; badlink: its page, then it stops.
    assert names == sorted([*(f"hostile/good-repo-{n}" for n in range(5)),
                            "hostile/scalaritems-repo-1",
                            "hostile/badlink-repo-1", "hostile/badlink-repo-2"])
    # badjson, htmlbody, nullitems, notobject, badlink: each one counted bad response
    assert stats["search/bad_responses"] == 5
    assert stats["search/bad_results"] == 3
    assert stats["retry/reason_count/503 Service Unavailable"] == RETRIES
    assert stats["search/failed_requests/scrapy.exceptions.DownloadFailedError"] == 1
    assert stats["search/failed_requests/zlib.error"] == 1
    errors = error_lines(log)
    for query in API_QUERIES:
        about = [line for line in errors if f"q={query}&" in line or f"{query!r}" in line]
        assert len(about) == (0 if query == "good" else 1), (query, about)
    served = fake_hostile.stats()["counts"]
    assert served["api:storm:1"] == RETRIES + 1
    assert "api:badlink:abc" not in served  # the unusable next link was not followed


@pytest.mark.timeout(120)
def test_dense_pages_stay_under_the_memory_bound_and_deep_ones_are_collected(
        collector: Collector, fake_hostile: Any) -> None:
    """Issue 19 items 9 and 10: 500,000 links in 15 MB, a page just under the cap with 50,000
    links, 100,000 list items, 1,600 nested divs. The worker's peak RSS stays under 200 MB,
    fetches stop at max_pages_per_site, and the deep page is collected."""
    site = f"{fake_hostile.url()}/dense/"
    cap = 30
    collector.configure(docs_urls=[site + "index.html"], spiders={"docs": {
        "max_pages_per_site": cap, "settings": {"WORKER_STATE_INTERVAL": 1}}})
    status, _, peak_mb = run_watched(collector, "docs", timeout=100)
    log = collector.log("docs")
    stats = collector.stats("docs")
    counts = fake_hostile.stats()["counts"]

    assert status == 0, log[-3000:]
    assert "Traceback" not in log and "Spider error" not in log, log[-3000:]
    assert stats.get("finish_reason") == "finished"
    items = {item["url"]: item for item in collector.items("docs")}
    # 1,600 nested divs: collected, text and Markdown intact (RecursionError before).
    nested = items[site + "nested.html"]
    assert NESTED_TEXT in nested["text"] and NESTED_TEXT in nested["markdown"]
    assert items[site + "items.html"]["markdown"].count("- i\n") == LIST_ITEMS - 1
    assert site + "big.html" in items
    # 15 MB of links: refused on its Content-Length, or cut at 2 MB without one.
    for page in ("links.html", "links-stream.html"):
        assert site + page not in items
        assert [line for line in error_lines(log) if mentions(line, site + page)]
    cut = [line for line in log.splitlines() if f"download max size ({MAXSIZE})" in line]
    assert {page for page in ("links.html", "links-stream.html")
            if any(site + page in line for line in cut)} == {"links.html", "links-stream.html"}
    assert stats["docs/failed_requests/scrapy.exceptions.DownloadCancelledError"] == 2
    # big.html's 50,000 links: only up to the site's cap asked, the rest never listed.
    asked = [key for key in counts if key.startswith("/dense/p")]
    assert len(asked) == cap - 1 - 5, len(asked)  # the index and its five pages count too
    assert stats["sitecap/held_back"] >= 1
    print(f"\ndense docs crawl: peak RSS {peak_mb:.0f} MB, memusage/max "
          f"{stats['memusage/max'] / MB:.0f} MB")
    assert peak_mb < MEMORY_CEILING_MB, f"peak RSS {peak_mb:.0f} MB"
    assert stats["memusage/max"] < MEMORY_CEILING_MB * MB


@pytest.mark.timeout(90)
@pytest.mark.parametrize("fake_github", [{"search_limit": 100000, "core_limit": 100000}],
                         indirect=True)
def test_search_crawl_with_fake_github_bad_answers(collector: Collector,
                                                   fake_github: Any) -> None:
    """The fake GitHub's own bad answers: invalid JSON, HTML instead of JSON, a 500 storm."""
    collector.configure(github=fake_github, spiders={"search": {
        "queries": ["few", "badjson", "htmlbody", "boom500"],
        "settings": {"RETRY_TIMES": RETRIES}}})
    generous_budget(collector)
    result = collector.crawl("search", timeout=60)
    log = collector.log("search")
    stats = collector.stats("search")
    assert result.returncode == 0, log[-3000:]
    assert "Traceback" not in log + result.stderr
    assert len(collector.items("search")) == 7  # "few" has seven results
    assert stats["search/bad_responses"] == 2
    assert stats["retry/reason_count/500 Internal Server Error"] == RETRIES
    assert stats["httperror/response_ignored_status_count/500"] == 1
    errors = error_lines(log)
    assert len([line for line in errors if "'badjson'" in line]) == 1
    assert len([line for line in errors if "'htmlbody'" in line]) == 1
    assert len([line for line in errors if "Gave up retrying" in line and "boom500" in line]) == 1
    assert len(errors) == 3, "\n".join(errors)


def hostile_search(collector: Collector, fake_hostile: Any, query: str) -> dict[str, Any]:
    """One ``scrapy crawl search`` of the hostile fake's ``query``: it must end 0 with no
    traceback and no ERROR line; its items by full name."""
    collector.configure(spiders={"search": {"queries": [query], "per_page": 3}})
    generous_budget(collector, web_url=fake_hostile.url(), web_min_interval=0,
                    api_url=f"{fake_hostile.url()}/api")
    status, _, _ = run_watched(collector, "search", timeout=45)
    log = collector.log("search")
    assert status == 0, log[-3000:]
    assert "Traceback" not in log and not error_lines(log), log[-3000:]
    return {item["full_name"]: item for item in collector.items("search")}


@pytest.mark.timeout(60)
def test_search_result_with_a_lone_surrogate_is_kept(collector: Collector,
                                                     fake_hostile: Any) -> None:
    items = hostile_search(collector, fake_hostile, "surrogate")  # read as strict UTF-8
    assert sorted(items) == ["hostile/surrogate-repo-1", "hostile/surrogate-repo-2"]
    assert items["hostile/surrogate-repo-1"]["description"] == "half a pair: \ufffd, then more"
    assert collector.stats("search")["items/lone_surrogates_replaced"] == 1


@pytest.mark.timeout(60)
def test_search_result_nested_past_the_limit_is_written_with_that_field_null(
        collector: Collector, fake_hostile: Any) -> None:
    """A description nested 900 lists deep: two RecursionError tracebacks and the item lost
    without a line, before."""
    items = hostile_search(collector, fake_hostile, "nested")
    log = collector.log("search")
    assert sorted(items) == ["hostile/nested-repo-1", "hostile/nested-repo-2"]
    assert items["hostile/nested-repo-1"]["description"] is None
    assert items["hostile/nested-repo-1"]["stargazers_count"] == 99  # the rest is kept
    assert items["hostile/nested-repo-2"]["description"] == "Repository 2 of query nested"
    (warning,) = [line for line in log.splitlines() if "] WARNING: " in line]
    assert "hostile/nested-repo-1: field description nests deeper than ITEM_MAX_DEPTH" \
        in warning
    assert collector.stats("search")["items/too_deep_nulled"] == 1


@pytest.mark.timeout(60)
def test_trending_page_with_thousands_of_rows_is_capped(collector: Collector,
                                                        fake_hostile: Any) -> None:
    collector.configure(spiders={"trending": {"languages": [""], "periods": ["daily"]}})
    generous_budget(collector, web_url=fake_hostile.url(), web_min_interval=0,
                    api_url=f"{fake_hostile.url()}/api")
    status, _, _ = run_watched(collector, "trending", timeout=45)
    log = collector.log("trending")
    assert status == 0, log[-3000:]
    written = collector.items("trending")
    items = [item for item in written if "rows" not in item]
    (snapshot,) = [item for item in written if "rows" in item]
    assert TRENDING_FLOOD_ROWS > 100
    assert [item["rank"] for item in items] == list(range(1, 101))  # TRENDING_MAX_ROWS
    assert [row["rank"] for row in snapshot["rows"]] == list(range(1, 101))
    assert collector.stats("trending")["trending/bad_responses"] == 1
    errors = error_lines(log)
    assert len(errors) == 1 and "more than 100 rows" in errors[0], errors
    assert mentions(errors[0], f"{fake_hostile.url()}/trending?since=daily")
