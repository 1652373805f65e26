"""Each store-backed component's rules, in-process: Scrapy's ``get_crawler`` with the project's
settings and every ``*_STORAGE`` pointing at the in-memory stores (scraper/stores/memory.py).

A "round" is a new crawler (a new worker) over the same memory space. No reactor runs, so the
engine is not running: for the components that is a closing crawl, in which a wait for a store
that is away gives up at once (the wait itself: tests/scraper/test_store_contract.py, and end to end
tests/e2e/test_distributed.py).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, signals
from scrapy.exceptions import DropItem
from scrapy.http import HtmlResponse, Response, TextResponse

from pipelines.itemstore import JsonLinesItemStore
from scraper.budget.conditional import ConditionalRequestMiddleware
from scraper.budget.middleware import LIMITED_META, TICKET_META, BudgetMiddleware
from scraper.dedup.contenthash import ContentHashPipeline
from scraper.dedup.deltafetch import ShardedDeltaFetch
from scraper.exceptions import DuplicateItem
from scraper.items import DocPageItem, TrendingPageItem, TrendingRepoItem
from scraper.stores.memory import MemoryOutage
from tests.support.incrawler import MEMORY, project_crawler
from tests.support.search import API, GITHUB


class Round:
    """One worker's crawler over the test's memory space."""

    def __init__(self, space: str, **settings: Any) -> None:
        self.crawler = project_crawler(**MEMORY, MEMORY_STORAGE_SPACE=space,
                                       COLLECTOR_DATA_DIR=f"{space}/data", **settings)
        self.stats = self.crawler.stats

    def stat(self, name: str) -> int:
        return self.stats.get_value(name, 0)

    def send(self, signal: object, **kwargs: Any) -> None:
        self.crawler.signals.send_catch_log(signal, spider=self.crawler.spider, **kwargs)


@pytest.fixture
def space(tmp_path: Path) -> str:
    return str(tmp_path)


# --- deltafetch -----------------------------------------------------------------------------------


def page(url: str, **meta: Any) -> Response:
    return HtmlResponse(url, body=b"<html></html>", request=Request(url, meta=meta))


class DeltaRound(Round):
    def __init__(self, space: str, refresh_after: float | None = None, **settings: Any) -> None:
        super().__init__(space, **settings)
        if refresh_after is not None:
            self.crawler.spider.refresh_after = refresh_after
        self.mw = ShardedDeltaFetch.from_crawler(self.crawler)
        self.mw.spider_opened(self.crawler.spider)

    def output(self, response: Response, elements: Iterable[Any]) -> list[Any]:
        async def result() -> AsyncIterator[Any]:
            for element in elements:
                yield element

        async def read() -> list[Any]:
            return [e async for e in self.mw.process_spider_output(response, result())]

        return asyncio.run(read())

    def written(self, item: Any, response: Response) -> None:
        self.send(signals.item_scraped, item=item, response=response)


def urls(elements: list[Any]) -> list[str]:
    return [e.url for e in elements if isinstance(e, Request)]


def test_deltafetch_records_a_page_once_its_item_is_written_then_skips_and_replays_it(
        space: str) -> None:
    first = DeltaRound(space)
    start, a = page("http://h/"), page("http://h/a")
    assert urls(first.output(start, [Request("http://h/a")])) == ["http://h/a"]
    item = {"url": "http://h/a"}
    out = first.output(a, [item, Request("http://h/b")])
    assert out[0] is item and urls(out) == ["http://h/b"]
    assert not first.stat("deltafetch/stored")  # yielded is not written: not recorded yet
    first.written(item, a)
    assert first.stat("deltafetch/stored") == 1
    second = DeltaRound(space)
    # a is skipped; its stored link b is followed instead, so nothing behind a is stranded.
    assert urls(second.output(start, [Request("http://h/a")])) == ["http://h/b"]
    assert second.stat("deltafetch/skipped") == 1 and second.stat("deltafetch/replayed") == 1
    # The start page itself yielded no item: never recorded, fetched every round.
    assert urls(DeltaRound(space).output(page("http://h/x"), [Request("http://h/")])) == [
        "http://h/"]


def test_deltafetch_a_duplicate_drop_is_done_any_other_drop_is_fetched_again(
        space: str) -> None:
    first = DeltaRound(space)
    dup, failed = {"url": "http://h/dup"}, {"url": "http://h/failed"}
    first.output(page("http://h/dup"), [dup])
    first.output(page("http://h/failed"), [failed])
    first.send(signals.item_dropped, item=dup, response=None,
               exception=DuplicateItem("content already collected"))
    first.send(signals.item_dropped, item=failed, response=None, exception=DropItem("disk"))
    second = DeltaRound(space)
    out = second.output(page("http://h/"), [Request("http://h/dup"), Request("http://h/failed")])
    assert urls(out) == ["http://h/failed"]


def test_deltafetch_refresh_after_and_reset_fetch_collected_pages_again(space: str) -> None:
    first = DeltaRound(space)
    item = {"url": "http://h/a"}
    first.output(page("http://h/a"), [item])
    first.written(item, page("http://h/a"))
    ask = [Request("http://h/a")]
    assert urls(DeltaRound(space, refresh_after=3600).output(page("http://h/"), ask)) == []
    assert urls(DeltaRound(space, refresh_after=0).output(page("http://h/"), ask)) == [
        "http://h/a"]
    reset = DeltaRound(space, DELTAFETCH_RESET=True)
    assert urls(reset.output(page("http://h/"), ask)) == ["http://h/a"]


def test_deltafetch_records_the_urls_that_redirected_to_a_page(space: str) -> None:
    first = DeltaRound(space)
    target = page("http://h/page1.html", redirect_urls=["http://h/moved.html"])
    item = {"url": target.url}
    first.output(target, [item])
    first.written(item, target)
    assert first.stat("deltafetch/stored_redirects") == 1
    out = DeltaRound(space).output(page("http://h/"), [Request("http://h/moved.html")])
    assert urls(out) == []  # skipped, and its one link (the page) is collected too


def test_deltafetch_with_its_store_away_fetches_rather_than_skips(space: str) -> None:
    first = DeltaRound(space)
    item = {"url": "http://h/a"}
    first.output(page("http://h/a"), [item])
    first.written(item, page("http://h/a"))
    second = DeltaRound(space)
    MemoryOutage.down(space)
    out = second.output(page("http://h/"), [Request("http://h/a")])
    assert urls(out) == ["http://h/a"]  # unknown is "not collected": asked again
    assert second.stat("deltafetch/unknown") == 1


# --- content hash ---------------------------------------------------------------------------------


def doc(url: str, text: str) -> DocPageItem:
    return DocPageItem(url=url, title="T", headings=["T"], markdown=text,
                       collected_at="2026-01-01T00:00:00Z")


class HashRound(Round):
    def __init__(self, space: str, **settings: Any) -> None:
        super().__init__(space, **settings)
        self.pipeline = ContentHashPipeline.from_crawler(self.crawler)
        self.pipeline.open_spider()

    def process(self, item: Any) -> Any:
        return asyncio.run(self.pipeline.process_item(item))

    def written(self, item: Any) -> None:
        self.send(signals.item_scraped, item=item, response=None)


def test_contenthash_drops_content_in_flight_or_written_and_frees_what_failed(
        space: str) -> None:
    first = HashRound(space)
    a = first.process(doc("http://h/a", "same"))
    assert len(a["content_hash"]) == 64
    with pytest.raises(DuplicateItem):  # the same content under a mirror URL, in flight
        first.process(doc("http://mirror/a", "same"))
    failed = first.process(doc("http://h/b", "other"))
    first.written(a)
    first.send(signals.item_error, item=failed, response=None, exception=OSError("disk"))
    assert first.stat("contenthash/stored") == 1 and first.stat("contenthash/dropped") == 1
    second = HashRound(space)
    with pytest.raises(DuplicateItem):  # written in an earlier round: dropped
        second.process(doc("http://h/a", "same"))
    assert second.process(doc("http://h/b", "other"))  # never written: collected now
    assert second.process(doc("http://h/a", "changed"))  # changed content is a new item
    reset = HashRound(space, CONTENTHASH_RESET=True)
    assert reset.process(doc("http://h/a", "same"))  # CONTENTHASH_RESET: written again


def test_contenthash_confirms_an_item_as_the_item_store_writes_it(space: str) -> None:
    """Not at ``item_scraped``, which comes on a later turn of the event loop, other items
    written by then: a kill in that gap left each of them unconfirmed, a duplicate line apiece
    (tests/e2e/test_faults_kills.py counted more duplicates than kills on a busy machine)."""
    first = HashRound(space)
    store = JsonLinesItemStore.from_crawler(first.crawler)
    store.open_spider()
    item = first.process(doc("http://h/a", "same"))
    store.process_item(item)
    assert first.stat("contenthash/stored") == 1  # before any item_scraped
    with pytest.raises(DuplicateItem):  # the worker a kill right here would be followed by
        HashRound(space).process(doc("http://h/a", "same"))
    first.written(item)
    assert first.stat("contenthash/stored") == 1  # item_scraped confirms nothing twice
    store.close_spider()
    lines = [json.loads(line) for path in (Path(space) / "data" / "items").rglob("*.jsonl*")
             for line in path.read_text().splitlines()]
    assert [line["content_hash"] for line in lines] == [item["content_hash"]]


def test_contenthash_drops_unchanged_trending_rows_but_never_page_snapshots(space: str) -> None:
    """Was test_crawl_github.py::test_trending_second_run_drops_unchanged_items_by_content_hash
    (a rule of the pipeline: the parsing and the item files are proven by the trending crawl
    tests)."""
    def rows() -> list[Any]:
        return [TrendingRepoItem(full_name=f"o/r{i}", period_stars=i, rank=i,
                                 collected_at="2026-01-01T00:00:00Z") for i in range(3)]

    def snapshot() -> TrendingPageItem:
        return TrendingPageItem(rows=[], collected_at="2026-01-01T00:00:00Z")

    first = HashRound(space)
    for item in [*rows(), snapshot()]:
        first.written(first.process(item))
    assert first.stat("contenthash/stored") == 3
    second = HashRound(space)
    for item in rows():
        with pytest.raises(DuplicateItem):
            second.process(item)
    assert second.process(snapshot())  # an observation: written every time it is seen
    assert second.stat("contenthash/dropped") == 3


def test_contenthash_with_its_store_away_at_close_leaves_the_page_unwritten(space: str) -> None:
    pipeline = HashRound(space)
    MemoryOutage.down(space)
    with pytest.raises(DropItem, match="unreachable at close") as caught:
        pipeline.process(doc("http://h/a", "text"))
    assert not isinstance(caught.value, DuplicateItem)  # deltafetch fetches the page again
    assert pipeline.stat("contenthash/unchecked_at_close") == 1
    MemoryOutage.back(space)
    assert HashRound(space).process(doc("http://h/a", "text"))  # nothing was claimed


# --- conditional requests (ETags) -----------------------------------------------------------------

NEXT = f'<{API}/search/repositories?q=x&page=2>; rel="next"'


class EtagRound(Round):
    def __init__(self, space: str) -> None:
        super().__init__(space, **GITHUB)
        self.mw = ConditionalRequestMiddleware.from_crawler(self.crawler)

    def ask(self, url: str) -> Request:
        request = Request(url)
        self.mw.process_request(request)
        return request

    def answer(self, request: Request, status: int, body: bytes = b"{}",
               **headers: str) -> Response:
        response = TextResponse(request.url, status=status, body=body, headers=headers,
                                request=request)
        return self.mw.process_response(request, response)


def test_conditional_asks_with_the_etag_of_a_finished_round_and_puts_link_back(
        space: str) -> None:
    url, incomplete = f"{API}/search/repositories?q=x", f"{API}/search/repositories?q=slow"
    first = EtagRound(space)
    first.answer(first.ask(url), 200, ETag='W/"1"', Link=NEXT)
    first.answer(first.ask(incomplete), 200, b'{"incomplete_results": true}', ETag='"2"')
    first.answer(first.ask("http://docs.example/x"), 200, ETag='"3"')  # not the API
    first.mw.spider_closed("finished")
    second = EtagRound(space)
    request = second.ask(url)
    assert request.headers[b"If-None-Match"] == b'W/"1"'
    assert b"If-None-Match" not in second.ask(incomplete).headers  # left results out: no ETag
    response = second.answer(request, 304)
    assert response.headers[b"Link"] == NEXT.encode()  # paging goes on past a 304
    assert second.stat("conditional/not_modified") == 1


def test_conditional_remembers_nothing_from_a_round_cut_short(space: str) -> None:
    url = f"{API}/search/repositories?q=x"
    first = EtagRound(space)
    first.answer(first.ask(url), 200, ETag='W/"1"')
    first.mw.spider_closed("shutdown")
    assert b"If-None-Match" not in EtagRound(space).ask(url).headers


def test_conditional_with_its_store_away_asks_unconditionally(space: str) -> None:
    url = f"{API}/search/repositories?q=x"
    first = EtagRound(space)
    first.answer(first.ask(url), 200, ETag='W/"1"')
    first.mw.spider_closed("finished")
    second = EtagRound(space)
    MemoryOutage.down(space)
    request = second.ask(url)
    assert b"If-None-Match" not in request.headers  # a full answer, never a wrong one
    second.answer(request, 200, ETag='W/"2"')
    second.mw.spider_closed("finished")  # not remembered: the next round asks afresh
    MemoryOutage.back(space)
    assert EtagRound(space).ask(url).headers[b"If-None-Match"] == b'W/"1"'


# --- the budget -----------------------------------------------------------------------------------


class BudgetRound(Round):
    def __init__(self, space: str) -> None:
        super().__init__(space, **GITHUB)
        self.mw = BudgetMiddleware.from_crawler(self.crawler)

    def answer(self, request: Request, status: int, body: bytes = b"{}",
               **headers: str) -> Request | Response:
        response = TextResponse(request.url, status=status, body=body, headers=headers,
                                request=request)
        return self.mw.process_response(request, response)


def limit_headers(remaining: int) -> dict[str, str]:
    # A reset within the hour: one farther away is no window, and not believed.
    return {"x-ratelimit-limit": "30", "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-reset": str(int(time.time()) + 600),
            "x-ratelimit-used": str(30 - remaining),
            "x-ratelimit-resource": "search"}


def test_budget_syncs_from_answers_and_pauses_on_a_rate_limit(space: str) -> None:
    budget = BudgetRound(space)
    url = f"{API}/search/repositories?q=x"
    assert budget.answer(Request(url), 200, **limit_headers(12)).status == 200
    search = {b["resource"]: b for b in budget.mw.store.buckets()}["search"]
    assert search["remaining"] == 12
    retry = budget.answer(Request(url), 403, b'{"message": "API rate limit exceeded"}',
                          **limit_headers(0))
    assert isinstance(retry, Request) and retry.dont_filter and retry.meta[LIMITED_META] == 1
    assert budget.stat("github_budget/limited/primary") == 1
    # The closing crawl (no engine here) sends nothing more: the request goes back unsent.
    assert asyncio.run(budget.mw.process_request(Request(url))).dont_filter
    assert budget.stat("github_budget/unsent_at_close") == 1


def test_budget_with_its_store_away_retries_a_rate_limit_and_passes_answers(space: str) -> None:
    budget = BudgetRound(space)
    url = f"{API}/search/repositories?q=x"
    assert budget.mw.store.up  # opened before the outage
    MemoryOutage.down(space)
    request = Request(url, meta={TICKET_META: None})
    retry = budget.answer(request, 403, b'{"message": "API rate limit exceeded"}',
                          **limit_headers(0))
    assert isinstance(retry, Request) and TICKET_META not in retry.meta  # asked again later
    assert budget.answer(Request(url), 200, **limit_headers(5)).status == 200
    budget.mw.spider_closed("finished")  # releasing its tickets fails quietly: they lapse
