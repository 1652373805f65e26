"""The gap ledger's rules in-process: how an outcome is classified, what a round writes and
how a reader resolves it (silent, skipped, the worst outcome), how rounds collapse into spans.
The whole thing against the fakes, with the user's commands: tests/e2e/test_gap_ledger.py."""

from __future__ import annotations

import asyncio
import errno
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import (
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadTimeoutError,
    IgnoreRequest,
)
from scrapy.http import HtmlResponse, Response

from scraper.downloadermiddlewares.ledger import (
    LedgerMiddleware,
    exception_outcome,
    response_outcome,
)
from scraper.extensions.ledger import FetchLedger, skip_cause
from scraper.utils.ledger import (
    LEDGER_META,
    Fetch,
    append_line,
    gap_spans,
    ledger_file,
    open_ledger,
    prune_ledger,
    scheduled_fetches,
)
from spiders.base import CollectorSpider
from spiders.docs import DocsSpider
from spiders.trending import TrendingSpider
from tests.support.incrawler import MEMORY, project_crawler


class Listed(CollectorSpider):
    name = "listed"
    ledger_kind = "list"

    def start_entries(self) -> list[str]:
        return ["a", "b", "c", "d"]


def test_outcomes_are_classified_by_answer_and_by_exception() -> None:
    assert response_outcome(200) == ("data", "")
    assert response_outcome(304) == ("not_modified", "")
    assert response_outcome(500) == ("failed", "HTTP 500")
    assert response_outcome(404) == ("failed", "HTTP 404")
    assert exception_outcome(DownloadConnectionRefusedError("no")) == ("failed", "refused")
    assert exception_outcome(DownloadTimeoutError("slow")) == ("failed", "timeout")
    assert exception_outcome(IgnoreRequest("Forbidden by robots.txt")) == ("failed", "robots")
    assert exception_outcome(OSError(errno.ENOSPC, "No space left on device")) == (
        "skipped", "disk full")
    assert exception_outcome(ValueError("odd")) == ("failed", "builtins.ValueError")
    assert skip_cause("shutdown", {"github_budget/unsent_at_close": 2})[0] == "budget"
    assert skip_cause("disk_full", {})[0] == "disk full"
    assert skip_cause("shutdown", {})[0] == "round cut short"
    assert skip_cause("finished", {})[0] == "not sent"
    assert exception_outcome(DownloadCancelledError()) == ("skipped", "round cut short")


def components(crawler: Crawler) -> tuple[FetchLedger, LedgerMiddleware]:
    """The crawler's own ledger extension and middleware, as Scrapy built them."""
    assert crawler.extensions is not None and crawler.engine is not None
    (ledger,) = [c for c in crawler.extensions.middlewares if isinstance(c, FetchLedger)]
    (middleware,) = [c for c in crawler.engine.downloader.middleware.middlewares
                     if isinstance(c, LedgerMiddleware)]
    return ledger, middleware


def a_round(tmp_path: Path, reason: str, **stats: Any) -> list[Fetch]:
    crawler = project_crawler(Listed, COLLECTOR_DATA_DIR=str(tmp_path))
    ledger, middleware = components(crawler)
    assert crawler.stats is not None
    for name, value in stats.items():
        crawler.stats.set_value(name, value)
    ledger.spider_opened(crawler.spider)

    def sent(key: str) -> Request:
        request = Request(f"http://127.0.0.1:9/{key}", meta={LEDGER_META: key})
        middleware.process_request(request)
        return request

    first = sent("a")
    middleware.process_request(first.replace(dont_filter=True))  # its retry: the same fetch
    middleware.process_response(first, Response(first.url, status=200))
    refused = sent("b")
    middleware.process_exception(refused, DownloadConnectionRefusedError("refused"))
    sent("c")  # still waiting (the budget) when the round closes
    ledger.spider_closed(reason)
    return scheduled_fetches(tmp_path / "state")


def test_a_round_records_each_scheduled_fetch_once(tmp_path: Path) -> None:
    fetches = a_round(tmp_path, "closespider_timeout", **{"github_budget/unsent_at_close": 1})
    assert [(f.key, f.outcome, f.cause) for f in fetches] == [
        ("a", "data", ""), ("b", "failed", "refused"), ("c", "skipped", "budget"),
        ("d", "skipped", "budget")]
    assert {(f.spider, f.shard, f.kind) for f in fetches} == {("listed", "0/1", "list")}
    assert "127.0.0.1:9" in fetches[1].detail


def plan(state: Path, started: str, pid: int, keys: list[str]) -> Path:
    path = ledger_file(state, started[:10], "listed-0of1")
    fd = open_ledger(path)
    append_line(fd, {"t": "plan", "round": started, "spider": "listed", "shard": "0/1",
                     "pid": pid, "kind": "list", "keys": keys})
    return path


def ended_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def test_a_killed_round_reads_silent_and_a_running_one_is_left_out(tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = plan(state, "2026-12-07T10:00:00.000Z", ended_pid(), ["a", "b"])
    with path.open("ab") as file:  # one outcome written, then killed inside a write
        file.write(json.dumps({"t": "fetch", "round": "2026-12-07T10:00:00.000Z",
                               "spider": "listed", "shard": "0/1", "key": "a",
                               "outcome": "data"}).encode() + b"\n{\"t\": \"fet")
    assert [(f.key, f.outcome) for f in scheduled_fetches(state)] == [
        ("a", "data"), ("b", "silent")]

    plan(state, "2026-12-07T11:00:00.000Z", subprocess.os.getpid(), ["a", "b"])
    assert [(f.key, f.outcome) for f in scheduled_fetches(state)] == [
        ("a", "data"), ("b", "silent")]  # this process runs that round: nothing yet
    assert len(scheduled_fetches(state, "2026-12-07T10:30:00.000Z")) == 0

    # A later round: the one before cannot report any more, whoever runs it.
    plan(state, "2026-12-07T12:00:00.000Z", subprocess.os.getpid(), ["a"])
    outcomes = [(f.round[11:13], f.key, f.outcome) for f in scheduled_fetches(state)]
    assert outcomes == [("10", "a", "data"), ("10", "b", "silent"), ("11", "a", "silent"),
                        ("11", "b", "silent")]
    assert all(f.round < "2026-12-07T12" for f in scheduled_fetches(state, settled_only=True))


def fetch(round_hour: int, outcome: str, cause: str = "", key: str = "k") -> Fetch:
    return Fetch("docs", "0/1", f"2026-12-07T{round_hour:02d}:00:00.000Z", "site", key,
                 outcome, cause, f"detail {round_hour}", "")


def test_consecutive_rounds_with_one_cause_collapse_into_a_span() -> None:
    spans = gap_spans([
        fetch(1, "failed", "refused"), fetch(2, "failed", "refused"),
        fetch(3, "failed", "HTTP 500"), fetch(4, "data"), fetch(5, "failed", "HTTP 500"),
        fetch(6, "not_modified"), fetch(1, "data", key="other"),
    ])
    assert [(s.key, s.cause, s.first_seen[11:13], s.last_seen[11:13], s.rounds, s.detail)
            for s in spans] == [
        ("k", "refused", "01", "02", 2, "detail 2"),
        ("k", "HTTP 500", "03", "03", 1, "detail 3"),
        ("k", "HTTP 500", "05", "05", 1, "detail 5"),
    ]
    assert gap_spans([fetch(1, "data"), fetch(2, "not_modified")]) == []


def test_days_past_the_kept_ones_are_removed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    for day in ("2026-09-01", "2026-09-08", "2026-12-07"):
        plan(state, f"{day}T10:00:00.000Z", 0, ["a"])
    now = 1_796_601_600.0  # 2026-12-07T00:00:00Z
    assert prune_ledger(state, 90, now) == ["2026-09-01"]
    assert [f.round[:10] for f in scheduled_fetches(state)] == ["2026-09-08", "2026-12-07"]


async def start_requests(spider: CollectorSpider) -> list[Request]:
    return [request async for request in spider.start()]


def test_a_trending_page_with_no_rows_is_a_gap_whatever_its_status(tmp_path: Path) -> None:
    crawler = project_crawler(TrendingSpider, **MEMORY, MEMORY_STORAGE_SPACE=str(tmp_path),
                              COLLECTOR_DATA_DIR=str(tmp_path), GITHUB_WEB_URL="https://gh.test",
                              TRENDING_LANGUAGES=["", "python"], TRENDING_PERIODS=["daily"])
    spider = crawler.spider
    assert isinstance(spider, TrendingSpider)
    ledger, middleware = components(crawler)
    ledger.spider_opened(spider)
    try:
        for request in asyncio.run(start_requests(spider)):
            middleware.process_request(request)
            body = b"<html><body>no rows here</body></html>"
            response = HtmlResponse(request.url, body=body, request=request)
            middleware.process_response(request, response)
            list(spider.parse(response))
    finally:
        spider.archive.close()
    ledger.spider_closed("finished")
    assert [(f.key, f.outcome, f.cause) for f in scheduled_fetches(tmp_path / "state")] == [
        ("daily||", "failed", "empty page"), ("daily|python|", "failed", "empty page")]


def test_a_docs_site_that_redirects_away_is_a_gap(tmp_path: Path) -> None:
    site, moved = "https://docs.test/en/", "https://elsewhere.test/docs/"
    crawler = project_crawler(DocsSpider, **MEMORY, MEMORY_STORAGE_SPACE=str(tmp_path),
                              COLLECTOR_DATA_DIR=str(tmp_path), DOCS_START_URLS=[site],
                              DOCS_SITEMAPS=False)
    spider = crawler.spider
    assert isinstance(spider, DocsSpider)
    ledger, middleware = components(crawler)
    ledger.spider_opened(spider)
    (request,) = asyncio.run(start_requests(spider))
    middleware.process_request(request)
    hop = request.replace(url=moved, meta={**request.meta, "redirect_urls": [site]})
    response = HtmlResponse(moved, body=b"<html><title>moved</title></html>", request=hop)
    middleware.process_response(hop, response)
    assert list(spider.parse(response)) == []
    ledger.spider_closed("finished")
    ((key, outcome, cause, detail),) = [(f.key, f.outcome, f.cause, f.detail)
                                        for f in scheduled_fetches(tmp_path / "state")]
    assert (key, outcome, cause) == (site, "failed", "redirected off the site")
    assert detail == f"{site} -> {moved}"
