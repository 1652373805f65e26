"""Complete search results past GitHub's 1000-result cap (spiders.search.complete).

Real ``scrapy crawl search`` against the fake GitHub, whose search honours ``stars:`` and
``created:``, caps at 1000, refuses a repeated qualifier and, when told, answers
``incomplete_results: true`` with results missing. The budget is small (30 requests per 2 s)
so that pacing matters and the test stays fast.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from scraper.config.collector import ConfigError, parse_config
from scraper.slicing.slices import RESULTS_CAP, parse_query
from tests.support.collector import Collector
from tests.support.fakes.launcher import FakeServer, start_fake_github
from tests.support.incrawler import crawl_log, crawl_round
from tests.support.scripted import Scripted
from tests.support.search import LIMIT, WINDOW, configure, expected_ids, is_probe, search_requests

QUERIES = ["longtail2600", "longtail3000 stars:<=50", "huge created:>=2018-01-01"]


def crawl(collector: Collector) -> tuple[dict[str, Any], str]:
    """A round of the search spider in this process: its stats and what it logged."""
    with crawl_log() as lines:
        stats = crawl_round("search", collector.config_path)
    log = "\n".join(lines)
    assert "Traceback" not in log
    return stats, log


def error_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if " ERROR: " in line]


@pytest.fixture(scope="module")
def rounds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Three rounds of the same queries: a first one that plans, a second after every
    repository's stars changed (the plan re-used, re-split where a slice grew), and a third
    with nothing changed."""
    home = tmp_path_factory.mktemp("complete")
    fake = start_fake_github(home / "fake", search_limit=LIMIT, search_window=WINDOW)
    try:
        collector = Collector(home / "collector")
        configure(collector, fake, QUERIES)
        out: dict[str, Any] = {"collector": collector, "rounds": []}
        for generation in (0, 1, 1):
            fake.control(reset_stats=True, generation=generation)
            files = set(collector.item_files("search"))
            stats, log = crawl(collector)
            new = [p for p in collector.item_files("search") if p not in files]
            items = [json.loads(line) for p in new for line in p.read_text().splitlines()]
            out["rounds"].append({"stats": stats, "items": items, "generation": generation,
                                  "requests": search_requests(fake), "fake": fake.stats(),
                                  "log": log})
        yield out
    finally:
        fake.stop()


def check_complete(round_: dict[str, Any]) -> None:
    by_query: dict[str, list[int]] = {query: [] for query in QUERIES}
    for item in round_["items"]:
        by_query[item["query"]].append(item["id"])  # the query as configured
    for query, ids in by_query.items():
        expected = expected_ids(query, round_["generation"])
        assert len(expected) > RESULTS_CAP, query  # the cap alone would lose results
        duplicates = [i for i, n in Counter(ids).items() if n > 1]
        assert not duplicates, (query, duplicates[:5])
        assert set(ids) == expected, (query, len(set(ids)), len(expected))
    fake = round_["fake"]
    assert fake["violations"] == 0 and fake["secondary_violations"] == 0
    assert not [r for r in round_["requests"] if r["status"] in (403, 422, 429)]


def test_first_round_collects_every_result_once(rounds: dict[str, Any]) -> None:
    first = rounds["rounds"][0]
    check_complete(first)
    # 40% of the long tail has no star: more than the cap in one star value, cut by date.
    zero = sum(1 for i in first["items"] if i["query"] == "longtail2600"
               and i["stargazers_count"] == 0)
    assert zero == 1040
    slices = {i["slice"] for i in first["items"] if i["query"] == "longtail2600"}
    assert any(s and s.startswith("stars:0 created:") for s in slices), slices
    for r in first["requests"]:
        q = r["params"]["q"]
        for name in ("stars:", "created:"):
            assert q.count(name) <= 1, q  # the user's qualifier merged, never repeated
        if not is_probe(r):
            assert r["params"]["per_page"] == "100"
    # Within the user's own range: every slice of the stars:<=50 query stays inside it.
    own = [r["params"]["q"] for r in first["requests"]
           if "longtail3000" in r["params"]["q"]]
    assert all(parse_query(q).stars.hi is not None and parse_query(q).stars.hi <= 50
               for q in own)
    created = [parse_query(r["params"]["q"]).created for r in first["requests"]
               if r["params"]["q"].endswith("huge")]
    assert all(c is not None and c.lo is not None and c.lo >= 1514764800 for c in created)
    # Pages: close to the ideal of one per 100 results; probes: a few per 1000.
    collected = len(first["items"])
    probes = sum(map(is_probe, first["requests"]))
    pages = len(first["requests"]) - probes
    print(f"round 1: {collected} repositories, {pages} pages, {probes} probes")
    assert pages <= 1.3 * collected / 100 + 3 * len(QUERIES)
    assert probes <= 4 * collected / 1000
    # Every slice paged to its end, and no slice above the cap: at least one per 1000 results.
    slices_total = first["stats"]["search/slices_total"]
    assert first["stats"]["search/slice_index"] == slices_total >= -(-collected // RESULTS_CAP)


def test_later_rounds_reuse_the_slices(rounds: dict[str, Any]) -> None:
    first, second, third = rounds["rounds"]
    check_complete(second)
    probes = [sum(map(is_probe, r["requests"])) for r in (first, second, third)]
    print(f"probes per round: {probes}")
    # Every star count moved (generation 1 adds 1-17 stars to each repository); probes only
    # where a slice grew past the cap.
    assert probes[1] < probes[0]
    assert "slicing it" in second["log"]
    # Nothing changed: every slice page unchanged (304, free), no probe, nothing yielded.
    assert probes[2] == 0
    assert {r["status"] for r in third["requests"]} == {304}
    assert len(third["requests"]) >= third["stats"]["search/slices_total"]
    assert not third["items"]


@pytest.mark.timeout(90)
def test_repeated_qualifier_is_one_error_and_the_cap_holds(collector: Collector,
                                                           fake_github_factory: Any) -> None:
    fake = fake_github_factory(search_limit=LIMIT, search_window=WINDOW)
    configure(collector, fake, ["huge stars:>10 stars:<100", "longtail2000"],
              max_results_per_query=1500)
    stats, log = crawl(collector)
    errors = error_lines(log)
    assert len(errors) == 1, errors
    assert "'huge stars:>10 stars:<100'" in errors[0] and "422" in errors[0]
    assert stats["search/refused"] == 1
    items = collector.items("search")
    assert len(items) == 1500 == len({i["id"] for i in items})
    assert {i["query"] for i in items} == {"longtail2000"}
    assert stats["search/max_results_reached"] == 1


@pytest.mark.timeout(90)
def test_incomplete_pages_are_asked_again(collector: Collector,
                                          fake_github_factory: Any) -> None:
    fake = fake_github_factory(search_limit=LIMIT, search_window=WINDOW)
    configure(collector, fake, ["longtail1500", "few"])
    fake.control(incomplete_every=4)
    stats, log = crawl(collector)
    served = fake.stats()["incomplete_served"]
    assert served >= 3
    assert stats["search/incomplete_results"] == served
    items = collector.items("search")
    by_query = Counter(i["query"] for i in items)
    assert by_query == {"longtail1500": 1500, "few": 7}
    assert {i["id"] for i in items if i["query"] == "longtail1500"} == expected_ids(
        "longtail1500")
    assert not error_lines(log)

    # A page GitHub keeps answering incomplete: one ERROR line, and it is never believed:
    # the next round asks it afresh (no If-None-Match from the cut-short answer) and again.
    configure(collector, fake, ["few"])
    for _ in range(2):
        fake.control(reset_stats=True, incomplete_every=1)
        stats, round_log = crawl(collector)
        log += "\n" + round_log
        statuses = [r["status"] for r in search_requests(fake)]
        assert statuses == [200, 200, 200], statuses
        assert stats["search/incomplete_given_up"] == 1
    errors = error_lines(log)
    assert len(errors) == 2 and all("incomplete" in line for line in errors), errors


class OffsiteAPI(Scripted):
    """The scripted API host, whose search answers point elsewhere: ``q=linked`` has a
    ``Link`` to ``other``, ``q=moved`` redirects there."""

    def __init__(self, other: str) -> None:
        super().__init__()
        self.other = other
        self.redirect_to = f"{other}/search/repositories?q=few"

    def answer(self, path: str, query: dict[str, str], handler: Any
               ) -> tuple[int, dict[str, str], bytes]:
        if path == "/search/repositories" and query.get("q") == "linked":
            body = json.dumps({"total_count": 2, "incomplete_results": False,
                               "items": [{"id": 1, "full_name": "o/r"}]}).encode()
            link = f'<{self.other}/search/repositories?q=few&page=2>; rel="next"'
            return 200, {"Content-Type": "application/json", "Link": link}, body
        return super().answer(path, query, handler)


@pytest.mark.timeout(60)
def test_search_pages_only_from_the_api_origin(collector: Collector,
                                               fake_github: FakeServer) -> None:
    api = OffsiteAPI(fake_github.url("api"))
    try:
        collector.configure(spiders={"search": {"queries": ["linked", "moved"]}})
        config = yaml.safe_load(collector.config_path.read_text())
        config["github"] = {"api_url": api.url, "web_url": fake_github.url("web")}
        collector.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        stats, log = crawl(collector)
    finally:
        api.close()
    items = collector.items("search")
    assert [(i["query"], i["id"]) for i in items] == [("linked", 1)]  # nothing from elsewhere
    errors = error_lines(log)
    assert len(errors) == 2, errors
    assert any("'linked'" in line and "leaves the API" in line for line in errors)
    assert any("'moved'" in line and "not from the API" in line for line in errors)
    assert stats["search/offsite_answers"] == 2
    assert not [r for r in search_requests(fake_github) if "page=2" in r["query"]]


@pytest.mark.timeout(90)
def test_status_shows_slice_progress(collector: Collector, fake_github_factory: Any) -> None:
    fake = fake_github_factory(search_limit=LIMIT, search_window=WINDOW)
    configure(collector, fake, ["longtail1500"])
    result = collector.runner("--workers", "1", "--spiders", "search", "--once", timeout=90)
    assert result.returncode == 0, result.stderr[-2000:]
    status = collector.runner("status")
    lines = status.stdout.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("search 0/1 "))
    total = collector.stats("search")["search/slices_total"]
    # the round's progress is on the indented line under the worker's row
    assert total >= 2 and f"slice {total}/{total}" in lines[row + 1], status.stdout


@pytest.mark.parametrize(("yaml_text", "message"), [
    ("spiders: {search: {complete: 'yes'}}", "spiders.search.complete: 'yes' is not true or "
                                             "false"),
    ("spiders: {search: {max_results_per_query: 0}}", "spiders.search.max_results_per_query: "
                                                      "0 is not an integer ≥ 1"),
])
def test_config_keys_are_validated(yaml_text: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(yaml_text, "c.yaml")
    assert str(caught.value) == f"c.yaml: {message}"
    config = parse_config("spiders: {search: {complete: false, max_results_per_query: 5}}", "c")
    assert config.search.complete is False and config.search.max_results_per_query == 5
