"""Answers whose parsed form, not their bytes, is the danger: every spider stays under 200 MB.

The real ``scrapy crawl`` against tests/support/fakes/hostile.py, each page under its spider's size
cap:
a trending page of 15 MB of ``<td>x`` and one of 180,000 rows; a search answer of 1,000,000
``{"id": n}`` results, one with more results than ``per_page``, results of the wrong types and
JSON nested 4,000 deep; docs pages of 380,000 cells and of 2,000 columns. Each is refused or
cut before its tree (or its decoded JSON) is built, with one ERROR line, and the worker's peak
resident set stays under the bound.
"""

from __future__ import annotations

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
from tests.support.fakes.hostile import GOOD_PAGES, SHAPE_PAGES


def crawl_watched(collector: Collector, spider: str) -> tuple[str, dict[str, Any], float]:
    status, _, peak_mb = run_watched(collector, spider, timeout=100)
    log = collector.log(spider)
    assert status == 0, log[-3000:]
    assert "Traceback" not in log and "Spider error" not in log, log[-3000:]
    print(f"\n{spider} shapes: peak RSS {peak_mb:.0f} MB")
    assert peak_mb < MEMORY_CEILING_MB, f"{spider}: peak RSS {peak_mb:.0f} MB"
    return log, collector.stats(spider), peak_mb


@pytest.mark.timeout(120)
def test_trending_pages_are_cut_before_their_tree_is_built(collector: Collector,
                                                           fake_hostile: Any) -> None:
    collector.configure(spiders={"trending": {"languages": ["cells", "rowflood"],
                                              "periods": ["daily"]}})
    generous_budget(collector, web_url=fake_hostile.url(), web_min_interval=0,
                    api_url=f"{fake_hostile.url()}/api")
    log, stats, _ = crawl_watched(collector, "trending")
    rows = [item for item in collector.items("trending") if "rows" not in item]
    # 180,000 rows: the first TRENDING_MAX_ROWS kept; 15 MB of cells: no rows, said so.
    assert [item["rank"] for item in rows] == list(range(1, 101))
    assert {item["trending_language"] for item in rows} == {"rowflood"}
    errors = error_lines(log)
    assert len(errors) == 2, errors
    (cells,) = [line for line in errors if "/trending/cells" in line]
    assert "more than 30000 elements" in cells and "0 rows" in cells
    (flood,) = [line for line in errors if "/trending/rowflood" in line]
    assert "more than 100 rows" in flood
    assert stats["trending/bad_responses"] == 2


@pytest.mark.timeout(120)
def test_search_answers_are_judged_before_they_are_decoded(collector: Collector,
                                                           fake_hostile: Any) -> None:
    collector.configure(spiders={"search": {
        "queries": ["million", "overfull", "badtypes", "deep"], "per_page": 4}})
    generous_budget(collector, web_url=fake_hostile.url(), web_min_interval=0,
                    api_url=f"{fake_hostile.url()}/api")
    log, stats, _ = crawl_watched(collector, "search")
    # Not a million junk items: the one good result of badtypes only.
    names = [item["full_name"] for item in collector.items("search")]
    assert names == ["hostile/badtypes-repo-4"]
    errors = error_lines(log)
    assert len(errors) == 4, errors
    for query in ("million", "overfull", "deep"):
        (line,) = [line for line in errors if f"{query!r}" in line]
        assert "not a search result" in line
    assert "JSON values where 4 results hold at most" in next(
        line for line in errors if "'million'" in line)
    assert "5 results where per_page is 4" in next(
        line for line in errors if "'overfull'" in line)
    assert "RecursionError" in next(line for line in errors if "'deep'" in line)
    (bad,) = [line for line in errors if "'badtypes'" in line]
    assert "3 of 4 results" in bad and "id [1, 2] is not" in bad
    assert stats["search/bad_results"] == 3
    assert stats["search/bad_responses"] == 3


@pytest.mark.timeout(120)
def test_docs_pages_of_too_many_elements_are_refused_unparsed(collector: Collector,
                                                              fake_hostile: Any) -> None:
    site = f"{fake_hostile.url()}/shapes/"
    collector.configure(docs_urls=[site + "index.html"])
    log, stats, _ = crawl_watched(collector, "docs")
    assert [item["url"] for item in collector.items("docs")] == [site + "index.html"]
    errors = error_lines(log)
    assert len(errors) == len(SHAPE_PAGES), errors
    for page in SHAPE_PAGES:
        (line,) = [line for line in errors if mentions(line, site + page)]
        assert "more than DOCS_MAX_ELEMENTS (150000)" in line
    assert stats["docs/too_many_elements"] == len(SHAPE_PAGES)


@pytest.mark.timeout(120)
def test_an_unreadable_robots_txt_is_one_line_and_the_site_is_crawled(
        collector: Collector, fake_hostile: Any) -> None:
    """50 MB of robots.txt, and one that never finishes: Scrapy's rule for a robots.txt that
    cannot be downloaded (crawl as if there were none), in one WARNING line, no traceback."""
    sites = {name: f"{fake_hostile.url(name)}/site/" for name in ("bigrobots", "slowrobots")}
    collector.configure(docs_urls=[site + "index.html" for site in sites.values()],
                        spiders={"docs": {"settings": {"DOWNLOAD_TIMEOUT": 3}}})
    log, _, _ = crawl_watched(collector, "docs")
    urls = {item["url"] for item in collector.items("docs")}
    for site in sites.values():
        assert {site + "index.html", *(site + page for page in GOOD_PAGES)} <= urls
    assert not error_lines(log), error_lines(log)
    about = [line for line in log.splitlines() if "robots.txt" in line and "] WARNING: " in line]
    for name in sites:
        host = fake_hostile.url(name).removeprefix("http://")
        assert len([line for line in about if f"robots.txt of {host} cannot be read" in line]) == 1
    # Besides ours, only Scrapy's own size warning for the 50 MB one.
    assert len(about) == 3 and "larger than download max size (512000)" in "".join(about)
    served = fake_hostile.stats()["counts"]
    assert served["bigrobots:/robots.txt"] == served["slowrobots:/robots.txt"] == 1
    assert fake_hostile.stats()["bytes_sent"]["bigrobots:/robots.txt"] < 16 * 1024 * 1024
