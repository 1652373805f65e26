"""A search round always ends: a slice that cannot be cut is taken as its first 1000 results,
once, and a query never sends more than its round's bound of requests.

In-process (the search spider built by ``get_crawler``, answered by a model of GitHub that
misbehaves on purpose), and a real ``scrapy crawl search`` against the fake GitHub's clones:
1500 repositories with the same stars, created in the same second.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sqlite3
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from scrapy import Request
from scrapy.http import TextResponse

from runner.status.render import progress_note
from scraper.slicing.searchround import request_bound
from scraper.slicing.slices import parse_query
from spiders.search import SearchSpider
from tests.support.collector import Collector
from tests.support.fakes.launcher import FakeServer
from tests.support.incrawler import MEMORY, project_crawler
from tests.support.search import API, GITHUB, configure, is_probe, search_requests

MAX_REQUESTS = 3000
"""A model round still going after this many requests would never have ended."""

Model = Callable[[str, int, int, bool], tuple[int, int | None]]
"""(slice query, stars lo, stars hi, quantile probe) -> (total_count, stars of result 1000)."""


def run_round(model: Model, query: str = "q") -> tuple[SearchSpider, list[str]]:
    """One in-process round of ``query`` against ``model``: every request the spider makes is
    answered, until it makes no more (or MAX_REQUESTS, a round that would not end)."""
    crawler = project_crawler(SearchSpider, **MEMORY, **GITHUB, SEARCH_QUERIES=[query],
                              SEARCH_PER_PAGE=100)
    spider = crawler.spider
    assert isinstance(spider, SearchSpider)

    async def start() -> list[Request]:
        return [request async for request in spider.start()]

    pending, asked = asyncio.run(start()), []
    while pending and len(asked) < MAX_REQUESTS:
        request = pending.pop(0)
        asked.append(request.url)
        params = {k: v[0] for k, v in parse_qs(urlsplit(request.url).query).items()}
        stars = parse_query(params["q"]).stars
        quantile = params.get("page") == "1000"
        total, top = model(params["q"], stars.lo or 0, stars.hi or 10**9, quantile)
        page = int(params.get("page", "1"))
        per_page = int(params["per_page"])
        count = 1 if quantile else max(0, min(per_page, total - (page - 1) * per_page))
        first = hash(request.url) % 10**9
        items = [{"id": first + i + 1, "full_name": f"o/r{first + i}",
                  "stargazers_count": top if quantile else 0} for i in range(count)]
        headers = {}
        if not quantile and page * per_page < min(total, 1000):
            params["page"] = str(page + 1)
            headers["Link"] = f'<{API}/search/repositories?{urlencode(params)}>; rel="next"'
        body = json.dumps({"total_count": total, "incomplete_results": False, "items": items})
        response = TextResponse(request.url, status=200, body=body.encode(), headers=headers,
                                request=request)
        callback = request.callback or spider.parse
        pending += [out for out in callback(response) if isinstance(out, Request)]
    assert not pending, f"the round was still going after {len(asked)} requests"
    return spider, asked


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def stale_sort(q: str, lo: int, hi: int, quantile: bool) -> tuple[int, int | None]:
    """GitHub's sort lagging its filter: 1500 repositories have ``stars:>=2009``, but sorted
    by stars the 1000th of them shows 2008, below the slice; nothing finer can be asked."""
    if hi < 2009:
        return 0, None
    return 1500, 2008 if quantile else None


def test_a_slice_the_sweep_cannot_cut_is_taken_once_with_one_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    spider, asked = run_round(stale_sort)
    assert [url for url, n in Counter(asked).items() if n > 1] == []  # nothing asked twice
    said = warnings(caplog)
    assert len(said) == 1 and "stars:>=2009 holds 1500 results" in said[0], said
    stats = spider.crawler.stats
    assert stats.get_value("search/slices_capped") == 1
    assert stats.get_value("search/request_bound_reached") is None
    pages = [url for url in asked if "per_page=100" in url and "stars%3A%3E%3D2009" in url]
    assert len(pages) == 10  # its first 1000, page by page
    plan = spider.plans.load("q")
    assert plan is not None and [p.qualifiers() for p in plan if p.capped] == ["stars:>=2009"]
    assert "incomplete: 1 slice past 1000" in progress_note(stats.get_stats())


def shifting(q: str, lo: int, hi: int, quantile: bool) -> tuple[int, int | None]:
    """A GitHub whose every slice keeps holding 1500, its 1000th result one star lower each
    time it is asked: a cut that never settles."""
    return 1500, hi - 1 if quantile else None


def test_a_round_stops_at_its_request_bound_and_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    spider, asked = run_round(shifting)
    bound = request_bound(2, 100)  # 1500 results: two slices' worth
    assert len(asked) == bound
    said = [line for line in warnings(caplog) if "bound" in line]
    assert said == [f"search 'q': stopped at this round's bound of {bound} requests (from "
                    f"its plan of {spider.rounds['q'].slices.__len__()} slices); the rest "
                    "is left for the next round"]
    assert spider.crawler.stats.get_value("search/request_bound_reached") == 1
    assert spider.plans.load("q") is None  # an unfinished plan is never saved


CLONES = "clones1500"
CAPPED = "stars:7 created:2020-09-13T12:26:40+00:00..2020-09-13T12:26:40+00:00"


@pytest.mark.timeout(120)
def test_uncuttable_slice_ends_the_crawl_warns_once_and_is_asked_once(
        collector: Collector, fake_github_factory: Any) -> None:
    fake: FakeServer = fake_github_factory(search_limit=200, search_window=2.0)
    configure(collector, fake, [CLONES])
    for round_, holds in ((1, "1500"), (2, "more than 1000")):  # round 2: unchanged, a 304
        fake.control(reset_stats=True)
        seen = len(collector.log("search"))
        result = collector.crawl("search", timeout=90)
        log = collector.log("search")[seen:]
        assert result.returncode == 0, log[-3000:]
        said = [line for line in log.splitlines() if " WARNING: " in line]
        assert len(said) == 1 and f"{CAPPED} holds {holds} results" in said[0], said
        requests = search_requests(fake)
        asked = Counter(r["query"] for r in requests)
        assert [q for q, n in asked.items() if n > 1] == [], round_
        assert re.search(r"; incomplete: 1 slice past 1000 results", result.stderr), \
            result.stderr[-500:]
        stats = collector.stats("search")
        assert stats["search/slices_capped"] == 1
        assert "search/request_bound_reached" not in stats
        if round_ == 2:  # the plan kept: no probe, the capped slice paged straight away
            assert not [r for r in requests if is_probe(r)]
    items = collector.items("search")
    assert len(items) == len({i["id"] for i in items}) == 1000
    db = sqlite3.connect(collector.data_dir / "state" / "search_slices.sqlite")
    (slices,) = db.execute("SELECT slices FROM plans WHERE query = ?", (CLONES,)).fetchone()
    db.close()
    assert [entry for entry in json.loads(slices) if len(entry) == 6] == [
        [7, 7, 1600000000, 1600000000, 1, 1]]
