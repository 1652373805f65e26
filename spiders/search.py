"""``search``: GitHub's REST repository search, one item per repository, paged by ``Link``.

GitHub serves only the first 1000 results of a query. With ``spiders.search.complete`` (the
default) a query that has more is cut into slices of at most 1000 (:mod:`scraper.slicing.slices`),
each paged to its end; the plan is kept (``state/search_slices.sqlite``) so later rounds page
the slices straight away and probe again only where a slice grew past the cap. Items keep the
query as configured and name their ``slice``; a repository met twice in a round (results shift
while paging) is yielded once. In the distributed mode the plan is the cluster's
(:mod:`scraper.cluster.searchspider`).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import Response
from twisted.python.failure import Failure

from scraper.budget.conditional import CONDITIONAL_META
from scraper.downloadermiddlewares.githubauth import origin
from scraper.items import SearchRepoItem
from scraper.slicing.plans import WHOLE, SlicePlanStorage
from scraper.slicing.searchround import BOUND_STAT, CAPPED_STAT, request_bound, slices_for
from scraper.slicing.slices import (
    RESULTS_CAP,
    Answer,
    Final,
    Probe,
    Slice,
    SlicedQuery,
    SliceError,
    Sweep,
    parse_query,
    resplit,
)
from scraper.stores.base import StoreUnavailable, build_store
from scraper.utils.bounds import json_value_bound
from scraper.utils.ledger import LEDGER_META
from scraper.utils.outcome import note_empty_listing
from spiders.base import CollectorSpider, failed_request

API_HEADERS = {
    "Accept": "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
}

COPIED_FIELDS = (
    "id", "full_name", "html_url", "description", "language", "stargazers_count",
    "forks_count", "open_issues_count", "topics", "created_at", "updated_at", "pushed_at",
    "archived",
)

MAX_VALUES_PER_RESULT = 1000
"""JSON values one search result may hold (GitHub's hold about 140, commas in the description
counted too): an answer with more per ``per_page`` is refused before it is decoded."""

INCOMPLETE_TRIES = 3
"""Times a page GitHub answered with ``incomplete_results: true`` is asked in all."""


def next_link(link_header: str) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header, as GitHub writes it, or None."""
    for part in link_header.split(","):
        url, _, params = part.partition(";")
        if 'rel="next"' in params.replace(" ", ""):
            return url.strip().strip("<>")
    return None


def hand_asked(url: str) -> dict[str, Any]:
    """The meta a round gives a search page, for one asked by URL alone: its ``q``, the whole
    query, not the query's first page (so it is neither sliced nor planned), asked once."""
    query = parse_qs(urlsplit(url).query).get("q", [""])[0]
    return {"query": query, "slice": "", "first": False, "tries": 1}


def first_result_index(url: str, default_per_page: int) -> int:
    """0-based index of the first result a search page URL asks for."""
    page = int(parse_qs(urlsplit(url).query).get("page", ["1"])[0])
    return (page - 1) * asked_per_page(url, default_per_page)


def asked_per_page(url: str, default: int) -> int:
    """The ``per_page`` a search URL asks for (GitHub's default, 30, when it names none)."""
    return int(parse_qs(urlsplit(url).query).get("per_page", [str(default)])[0])


def refuse_oversized(body: bytes, per_page: int) -> None:
    """ValueError for an answer that would build more than ``per_page`` real results could:
    judged on the bytes (a comma and bracket count), before ``json.loads`` builds anything."""
    limit = MAX_VALUES_PER_RESULT * per_page + MAX_VALUES_PER_RESULT
    values = json_value_bound(body)
    if values > limit:
        raise ValueError(f"{values} JSON values where {per_page} results hold at most {limit}")


def result_problem(repo: Any) -> str | None:
    """Why a search result is not a repository this spider can store, or None."""
    if not isinstance(repo, dict):
        return f"a {type(repo).__name__}, not an object"
    repo_id, name, topics = repo.get("id"), repo.get("full_name"), repo.get("topics")
    if type(repo_id) is not int or not 0 < repo_id < 2**63:
        return f"id {str(repo_id)[:40]} is not a positive 64-bit integer"
    if not isinstance(name, str) or "/" not in name:
        return f"full_name {str(name)[:40]!r} is not owner/name"
    if topics is not None and not (isinstance(topics, list)
                                   and all(isinstance(topic, str) for topic in topics)):
        return f"topics {str(topics)[:40]} is not a list of names"
    return None


@dataclass
class QueryRound:
    """One configured query in this round: its slices, its planning, what it has yielded."""

    query: str
    parsed: SlicedQuery | None
    slices: dict[str, Slice | None] = field(default_factory=dict)  # key → slice, plan order
    sweeps: dict[int, Sweep] = field(default_factory=dict)
    ids: set[int] = field(default_factory=set)
    items: int = 0
    done: int = 0  # slices paged to their end
    changed: bool = False  # the plan differs from the stored one
    broken: bool = False  # planning failed: this round's plan is not a whole partition
    cuts: dict[int, tuple[str, list[Slice]]] = field(default_factory=dict)  # sweep → what it
    # cuts (a slice key, "" for the query) and the slices it settled on so far
    stopped: bool = False  # max_results_per_query reached
    cut: set[str] = field(default_factory=set)  # slices split this round: never split again
    capped: set[str] = field(default_factory=set)  # slices taken as their first 1000
    answers: dict[Probe, Answer] = field(default_factory=dict)  # a probe is asked once a round
    sent: int = 0  # requests this round
    # The most requests this round may send (scraper.slicing.searchround); None in a worker that did
    # not start the query (Redis mode), which cannot count the others' share.
    bound: int | None = None
    bounded: bool = False  # the bound was reached


class SearchSpider(CollectorSpider):
    name = "search"
    uses_github_token = True  # read by GitHubAuthMiddleware: only this spider sends the token
    # A 422 ends a query (past the result cap: a warning; a refused query: an error), not an
    # HttpError; a 304 (the budget middleware asked with If-None-Match) means "unchanged".
    custom_settings = {"HTTPERROR_ALLOWED_CODES": [304, 422]}

    _plans: SlicePlanStorage | None = None
    api_url: str
    api_origin: tuple[str, str, int | None]
    sort: str
    per_page: int
    max_results: int | None
    rounds: dict[str, QueryRound]
    complete: bool
    _sweep_ids: int

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SearchSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, SearchSpider)
        settings = crawler.settings
        spider.api_url = settings["GITHUB_API_URL"].rstrip("/")
        spider.api_origin = origin(spider.api_url)
        spider.sort = settings["SEARCH_SORT"]
        spider.per_page = settings.getint("SEARCH_PER_PAGE")
        cap = settings.get("SEARCH_MAX_RESULTS_PER_QUERY")
        spider.max_results = None if cap in (None, "") else int(cap)
        spider.rounds = {}
        spider._sweep_ids = 0
        spider.complete = settings.getbool("SEARCH_COMPLETE")
        return spider

    def start_entries(self) -> list[str]:
        return self.settings.getlist("SEARCH_QUERIES")

    ledger_kind = "query"

    def state(self, query: str) -> QueryRound:
        """The query's round state; made on first sight in a worker that did not start it (the
        distributed mode hands out requests another worker made)."""
        if query not in self.rounds:
            self.rounds[query] = QueryRound(query, self._sliced(query) if self.complete else None)
        return self.rounds[query]

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for query in self.my_entries():
            state = self.state(query)
            complete = state.parsed is not None
            plan = self._load_plan(query) if complete else None
            state.bound = request_bound(len(plan or ()), self.per_page)
            if not plan:  # no plan yet, or the query fits: the query itself, page 1
                state.changed = plan is None and complete
                state.slices[""] = None
                request = self.page_request(self.query_url(query), state, "", first=True)
                if state.changed:  # read by whichever worker gets the answer
                    request.meta["planless"] = True
                requests = [request]
            else:
                for piece in plan:
                    state.slices[piece.qualifiers()] = piece
                self._progress()
                requests = [self.slice_request(state, piece) for piece in plan]
            for request in self.within_bound(state, requests):
                yield request
        self._progress()

    def within_bound(self, state: QueryRound, produced: Iterable[Any]) -> Iterator[Any]:
        """``produced`` until the query has sent its round's bound of requests; then one line,
        and its other requests are left for the next round."""
        for output in produced:
            if isinstance(output, scrapy.Request):
                if state.bound is not None and state.sent >= state.bound:
                    if not state.bounded:
                        state.bounded = True
                        self.crawler.stats.inc_value(BOUND_STAT)
                        self.logger.warning(
                            "search %r: stopped at this round's bound of %d requests (from "
                            "its plan of %d slices); the rest is left for the next round",
                            state.query, state.bound, len(state.slices))
                    continue
                state.sent += 1
            yield output

    def _sliced(self, query: str) -> SlicedQuery | None:
        try:
            return parse_query(query)
        except SliceError as exc:
            self.crawler.stats.inc_value("search/unsliceable")
            self.logger.warning("search %r cannot be sliced (%s): only its first %d results "
                                "are collected", query, exc, RESULTS_CAP)
            return None

    @property
    def plans(self) -> SlicePlanStorage:
        if self._plans is None:
            self._plans = build_store(self.crawler, "SLICEPLAN_STORAGE")
        return self._plans

    def _load_plan(self, query: str) -> list[Slice] | None:
        try:
            return self.plans.load(query)
        except StoreUnavailable:  # unknown: planned afresh, as a query never seen
            return None

    def closed(self, reason: str) -> None:
        if self._plans is not None:
            self._plans.close()

    # --- requests -----------------------------------------------------------------------------

    def query_url(self, q: str, **params: Any) -> str:
        query = {"q": q, "sort": self.sort, "order": "desc", "per_page": self.per_page,
                 **params}
        return f"{self.api_url}/search/repositories?{urlencode(query)}"

    def page_request(self, url: str, state: QueryRound, key: str | None, *, first: bool = False,
                     tries: int = 1, fresh: bool = False) -> scrapy.Request:
        meta: dict[str, Any] = {"deltafetch_enabled": False, "query": state.query,
                                "slice": key, "first": first, "tries": tries,
                                LEDGER_META: state.query}
        if fresh:
            meta[CONDITIONAL_META] = False
        return scrapy.Request(url, callback=self.parse, errback=self.page_failed,
                              headers=API_HEADERS, dont_filter=True, meta=meta)

    def slice_request(self, state: QueryRound, piece: Slice) -> scrapy.Request:
        assert state.parsed is not None
        url = self.query_url(piece.query(state.parsed.base))
        request = self.page_request(url, state, piece.qualifiers(), first=True)
        request.meta["piece"] = piece.to_json()  # the slice, for a worker that did not plan it
        return request

    def probe_request(self, state: QueryRound, sweep_id: int, probe: Probe,
                      tries: int = 1) -> scrapy.Request:
        """``per_page=1``: only ``total_count`` and, for a quantile, result 1000 by stars.
        Never conditional: a 304 would carry neither."""
        assert state.parsed is not None
        params = {"sort": "stars", "per_page": 1}
        if probe.quantile:
            params["page"] = RESULTS_CAP
        self.crawler.stats.inc_value("search/probes")
        return scrapy.Request(
            self.query_url(probe.slice.query(state.parsed.base), **params),
            callback=self.parse_probe, errback=self.probe_failed, headers=API_HEADERS,
            dont_filter=True, priority=1,  # finish the plan first: its slices are then known
            meta={"deltafetch_enabled": False, "query": state.query, "sweep": sweep_id,
                  "slice": state.cuts[sweep_id][0], "probe": probe, "tries": tries,
                  CONDITIONAL_META: False, LEDGER_META: state.query})

    # --- answers ------------------------------------------------------------------------------

    def read(self, response: Response, state: QueryRound) -> dict[str, Any] | None:
        """The search answer's JSON, or None after one ERROR line (wrong origin, refused
        query, not a search result)."""
        query = state.query
        if origin(response.url) != self.api_origin:
            self.crawler.stats.inc_value("search/offsite_answers")
            self.logger.error("search %r: answer from %s, not from the API (%s); ignored",
                              query, response.url, self.api_url)
            return None
        if response.status == 422:
            message = _message(response.body)
            if "Validation Failed" in message:
                self.crawler.stats.inc_value("search/refused")
                self.logger.error("search %r: GitHub refused %s (422 %s)", query, response.url,
                                  message)
            else:
                self.crawler.stats.inc_value("search/unprocessable")
                self.logger.warning("search %r ended: GitHub answered 422 at %s", query,
                                    response.url)
            return None
        try:
            per_page = asked_per_page(response.url, self.per_page)
            refuse_oversized(response.body, per_page)
            body = json.loads(response.body)
            results = body["items"]
            if not isinstance(results, list):
                raise TypeError(f"'items' is {type(results).__name__}, not a list")
            if len(results) > per_page:
                raise ValueError(f"{len(results)} results where per_page is {per_page}")
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            self.crawler.stats.inc_value("search/bad_responses")
            note_empty_listing(self.crawler.stats, response.url)
            self.logger.error("search %r: not a search result at %s (%s: %s)", query,
                              response.url, type(exc).__name__, exc)
            return None
        return body

    def incomplete(self, response: Response, body: dict[str, Any]) -> bool:
        """GitHub left results out; True when the answer is being asked for again."""
        if body.get("incomplete_results") is not True:
            return False
        stats = self.crawler.stats
        stats.inc_value("search/incomplete_results")
        tries = response.meta["tries"]
        if tries < INCOMPLETE_TRIES:
            return True
        stats.inc_value("search/incomplete_given_up")
        self.logger.error("search %r: GitHub answered incomplete results %d times at %s; "
                          "what it left out is not collected this round",
                          response.meta["query"], tries, response.url)
        return False

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if "query" not in response.meta:  # a page asked by hand: scrapy parse URL --spider search
            response.meta.update(hand_asked(response.url))
        state = self.state(response.meta["query"])
        yield from self.within_bound(state, self.answer(response, state))

    def answer(self, response: Response, state: QueryRound) -> Iterator[Any]:
        key = response.meta["slice"]
        if key and key not in state.slices and "piece" in response.meta:
            state.slices[key] = Slice.from_json(response.meta["piece"])
        if response.status == 304:
            # Unchanged since a round that collected it: no items, but later pages may differ.
            self.crawler.stats.inc_value("search/not_modified")
            piece = state.slices.get(key or "")
            if response.meta["first"] and piece is not None and piece.capped:
                self.mark(state, key, None)  # as its plan says: unchanged, still past the cap
            planless = response.meta.get("planless", False)
            if response.meta["first"] and key == "" and (state.changed or planless):
                # No plan says this query fits under the cap: ask afresh for its total_count.
                request = self.page_request(response.url, state, key, first=True, fresh=True)
                request.meta["planless"] = planless
                yield request
                return
            yield from self.follow_next(response, state, key)
            return
        body = self.read(response, state)
        if body is None:
            self.slice_done(state)
            return
        again = self.incomplete(response, body)
        if again:
            yield self.page_request(response.url, state, key, first=response.meta["first"],
                                    tries=response.meta["tries"] + 1)
        yield from self.items(response, state, key, body["items"])
        if again:
            return
        total = body.get("total_count")
        if response.meta["first"] and state.parsed is not None and isinstance(total, int):
            if total > RESULTS_CAP and self.splittable(state, key) and key not in state.cut:
                # The slice gives way to smaller ones; their pages come instead of its own.
                yield from self.split(state, key, total)
                return
            self.mark(state, key, total)
            self.query_fits(state, response)
        yield from self.follow_next(response, state, key)

    def items(self, response: Response, state: QueryRound, key: str | None,
              results: list[Any]) -> Iterator[SearchRepoItem]:
        problems = [result_problem(repo) for repo in results]
        repos = [repo for repo, problem in zip(results, problems, strict=True) if not problem]
        if len(repos) != len(results):
            first = next(problem for problem in problems if problem)
            self.crawler.stats.inc_value("search/bad_results", len(results) - len(repos))
            self.logger.error("search %r: %d of %d results at %s are not repositories (%s); "
                              "skipped", state.query, len(results) - len(repos), len(results),
                              response.url, first)
        cap = self.max_results
        for repo in repos:
            repo_id = repo.get("id")
            if repo_id in state.ids:
                self.crawler.stats.inc_value("search/duplicates")
                continue
            if cap is not None and state.items >= cap:
                if not state.stopped:
                    state.stopped = True
                    self.crawler.stats.inc_value("search/max_results_reached")
                    self.logger.info("search %r: max_results_per_query (%d) reached; the rest "
                                     "is left for the next round", state.query, cap)
                return
            if repo_id is not None:
                state.ids.add(repo_id)
            state.items += 1
            yield self.stamp(self.item(state.query, key or None, repo))

    def follow_next(self, response: Response, state: QueryRound,
                    key: str | None) -> Iterator[scrapy.Request]:
        """The ``rel="next"`` page, never one that starts past GitHub's result cap."""
        link = next_link((response.headers.get("Link") or b"").decode("latin-1"))
        if not link or state.stopped:
            self.slice_done(state)
            return
        try:
            start = first_result_index(link, self.per_page)
        except ValueError as exc:
            self.crawler.stats.inc_value("search/bad_responses")
            self.logger.error("search %r ended: unusable next link %r at %s (%s)", state.query,
                              link, response.url, exc)
            self.slice_done(state)
            return
        if origin(link) != self.api_origin:
            self.crawler.stats.inc_value("search/offsite_answers")
            self.logger.error("search %r ended: next link %r at %s leaves the API (%s)",
                              state.query, link, response.url, self.api_url)
            self.slice_done(state)
            return
        if start < RESULTS_CAP:
            yield self.page_request(link, state, key)
        else:
            self.slice_done(state)

    def page_failed(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        if request is not None and "query" in request.meta:
            self.slice_done(self.state(request.meta["query"]))
        self.request_failed(failure)

    # --- slicing ------------------------------------------------------------------------------

    def piece(self, state: QueryRound, key: str) -> Slice:
        assert state.parsed is not None
        return state.slices.get(key) or Slice(state.parsed.stars, state.parsed.created)

    def splittable(self, state: QueryRound, key: str) -> bool:
        """False for one second of one star count, or a slice this round's sweep could not
        cut: nothing finer can be asked for."""
        piece = self.piece(state, key)
        return key not in state.capped and not (
            piece.stars.single() and piece.created is not None and piece.created.single())

    def mark(self, state: QueryRound, key: str, total: int | None) -> None:
        """Record in the plan whether slice ``key``, holding ``total`` (None: unchanged since
        its plan said more than the cap), is past the cap; one WARNING the first time this
        round."""
        piece = state.slices.get(key)
        capped = total is None or total > RESULTS_CAP
        if capped and key not in state.capped:
            state.capped.add(key)
            self.crawler.stats.inc_value(CAPPED_STAT)
            self.logger.warning("search %r: %s holds %s results and cannot be cut finer: only "
                                "its first %d are collected (marked incomplete in its plan)",
                                state.query, key or "the query",
                                f"{total}" if total else f"more than {RESULTS_CAP}",
                                RESULTS_CAP)
        if piece is not None and piece.capped != capped:
            state.slices[key] = replace(piece, capped=capped)
            state.changed = True

    def split(self, state: QueryRound, key: str, total: int) -> Iterator[scrapy.Request]:
        """Start cutting slice ``key`` (or the whole query, ``""``) that holds ``total``."""
        piece = self.piece(state, key)
        self.crawler.stats.inc_value("search/splits")
        self.logger.info("search %r: %s holds %d results; slicing it", state.query,
                         key or "the query", total)
        state.slices.pop(key, None)  # absent in a worker that did not plan it (Redis mode)
        state.cut.add(key)
        state.changed = True
        if not key and state.bound is not None:  # no plan: room for the slices it needs
            state.bound = max(state.bound, request_bound(slices_for(total), self.per_page))
        self._sweep_ids += 1
        state.sweeps[self._sweep_ids] = resplit(piece, total, time.time())
        state.cuts[self._sweep_ids] = (key, [])
        yield from self._follow_sweep(state, self._sweep_ids, None)

    def _follow_sweep(self, state: QueryRound, sweep_id: int,
                      answer: Answer | None) -> Iterator[scrapy.Request]:
        """Run a sweep to its next probe, paging the slices it settles on meanwhile."""
        sweep = state.sweeps[sweep_id]
        try:
            step = sweep.send(answer)
            while isinstance(step, Final) or step in state.answers:
                if isinstance(step, Final):
                    state.cuts[sweep_id][1].append(step.slice)
                    yield from self._settle(state, step)
                    step = next(sweep)
                else:  # asked already this round: its answer stands
                    step = sweep.send(state.answers[step])
        except StopIteration:
            del state.sweeps[sweep_id]
            self.sweep_done(state, sweep_id)
            return
        if not state.stopped:
            yield self.probe_request(state, sweep_id, step)

    def _settle(self, state: QueryRound, final: Final) -> Iterator[scrapy.Request]:
        key = final.slice.qualifiers()
        state.slices[key] = final.slice
        if not final.splittable and final.total is not None and final.total > RESULTS_CAP:
            self.mark(state, key, final.total)
        self._progress()
        if state.stopped:
            return
        if key not in state.cut:
            yield self.slice_request(state, final.slice)
        elif final.total is None or final.total > self.per_page:
            # The cut gave the slice back whole: its first page is in, page on from the second.
            assert state.parsed is not None
            url = self.query_url(final.slice.query(state.parsed.base), page=2)
            yield self.page_request(url, state, key)
        else:
            self.slice_done(state)

    def query_fits(self, state: QueryRound, response: Response) -> None:
        """The query's first page holds all its results: its plan is the query itself."""
        self._save(state)

    def sweep_done(self, state: QueryRound, sweep_id: int) -> None:
        """A sweep settled every slice of what it cut (``state.cuts[sweep_id]``)."""
        del state.cuts[sweep_id]
        self._save(state)

    def _save(self, state: QueryRound) -> None:
        if state.sweeps or state.broken or state.stopped or state.bounded or not state.changed:
            return
        plan = [piece for piece in state.slices.values() if piece is not None] or WHOLE
        try:
            self.plans.save(state.query, plan)
        except StoreUnavailable:  # kept for the next save of this query; else planned again
            return
        state.changed = False
        if plan:
            self.logger.info("search %r: %d slices planned", state.query, len(plan))

    def parse_probe(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        state = self.state(response.meta["query"])
        yield from self.within_bound(state, self.probe_answer(response, state))

    def probe_answer(self, response: Response, state: QueryRound) -> Iterator[scrapy.Request]:
        sweep_id, probe = response.meta["sweep"], response.meta["probe"]
        body = self.read(response, state)
        if body is None:
            self._abandon(state, sweep_id, probe)
            return
        # A count from a search that timed out is too low: never plan on it.
        if self.incomplete(response, body):
            yield self.probe_request(state, sweep_id, probe, response.meta["tries"] + 1)
            return
        total = body.get("total_count")
        results = body["items"]
        top = results[0].get("stargazers_count") if results and isinstance(
            results[0], dict) else None
        if not isinstance(total, int):
            self.crawler.stats.inc_value("search/bad_responses")
            self.logger.error("search %r: no total_count at %s", state.query, response.url)
            self._abandon(state, sweep_id, probe)
            return
        state.answers[probe] = Answer(total, top if isinstance(top, int) else None)
        yield from self._follow_sweep(state, sweep_id, state.answers[probe])

    def probe_failed(self, failure: Failure) -> None:
        request = failed_request(failure)
        state = self.state(request.meta["query"])
        self._abandon(state, request.meta["sweep"], request.meta["probe"])
        self.request_failed(failure)

    def _abandon(self, state: QueryRound, sweep_id: int, probe: Probe) -> None:
        """A probe without an answer: the range it was cutting is not collected this round."""
        state.sweeps.pop(sweep_id, None)
        state.cuts.pop(sweep_id, None)
        state.broken = True
        self.crawler.stats.inc_value("search/slicing_failed")
        self.logger.warning("search %r: slicing stopped at %s; results from there on are not "
                            "collected this round", state.query, probe.slice.qualifiers())

    def slice_done(self, state: QueryRound) -> None:
        state.done += 1
        self._progress()

    def _progress(self) -> None:
        """``search/slice_index`` of ``search/slices_total`` this round, for ``status``."""
        stats = self.crawler.stats
        rounds = self.rounds.values()
        stats.set_value("search/slices_total", sum(len(s.slices) for s in rounds))
        stats.set_value("search/slice_index", sum(s.done for s in rounds))

    @staticmethod
    def item(query: str, piece: str | None, repo: dict[str, Any]) -> SearchRepoItem:
        item = SearchRepoItem(query=query, slice=piece,
                              **{key: repo.get(key) for key in COPIED_FIELDS})
        license_info = repo.get("license")
        item["license"] = license_info.get("spdx_id") if isinstance(license_info, dict) else None
        item["topics"] = list(repo.get("topics") or [])
        return item


def _message(body: bytes) -> str:
    try:
        refuse_oversized(body, 1)
        data = json.loads(body)
    except (ValueError, RecursionError):
        return "no JSON body"
    return str(data.get("message", "")) if isinstance(data, dict) else ""
