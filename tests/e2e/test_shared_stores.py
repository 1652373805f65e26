"""One dataset whatever the shard plan (issue 15), through the runner's real processes and
rounds of the docs spider in this process (tests/support/incrawler.py), against the fake docs sites,
whose per-URL counters prove what was fetched.

* resharding (runner 6 workers → runner 4 workers → a hand-run shard 1/5) writes nothing new and
  fetches only each site's start page — a link that redirects to a collected page included;
* a site bigger than ``max_pages_per_site`` is covered over rounds, ≤ cap pages per round;
* per-shard stores of earlier versions are merged in (moved aside, never deleted), idempotently;
* the reset switches, and the summary line every ``scrapy crawl`` ends with.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from tests.support.collector import Collector, counts, fetched_since, summary
from tests.support.incrawler import crawl_round
from tests.support.stores import rows


def merged(path: Path) -> list[Path]:
    """The old store's merged-aside copies (reading one leaves its -wal and -shm beside it)."""
    return [p for p in path.parent.glob(f"{path.name}.merged-*")
            if not p.name.endswith(("-wal", "-shm"))]


@pytest.mark.timeout(240)
def test_a_new_shard_plan_writes_nothing_new_and_fetches_only_start_pages(
        collector: Collector, fake_docs_factory, capsys) -> None:
    docs = fake_docs_factory(sites=6, pages=8, redirect=True)
    starts = [f"{docs.url()}/site{k}/" for k in range(6)]
    collector.configure(docs_urls=starts)

    first = collector.runner("--workers", "6", "--spiders", "docs", "--once")
    assert first.returncode == 0, first.stderr[-3000:]
    collected = collector.items("docs")
    assert len(collected) == 6 * 9  # per site: 8 pages (page0 = the root) + flaky
    after_first = counts(docs)
    assert all(after_first[f"/site{k}/moved.html"] == 1 for k in range(6))

    second = collector.runner("--workers", "4", "--spiders", "docs", "--once")
    assert second.returncode == 0, second.stderr[-3000:]
    assert len(collector.items("docs")) == len(collected)  # 0 new docs items
    assert fetched_since(docs, after_first) == Counter({f"/site{k}/": 1 for k in range(6)})
    # Each worker's summary line went to its log too.
    for i in range(4):
        assert summary(collector.log("docs", f"{i}/4"))[2] == "0"

    after_second = counts(docs)
    capsys.readouterr()
    crawl_round("docs", collector.config_path, shard="1/5")
    assert len(collector.items("docs")) == len(collected)
    assert fetched_since(docs, after_second) == Counter({"/site1/": 1})
    shard, pages, new, skipped, dropped, where = summary(capsys.readouterr().err)
    # The start page, read every round, is the one page fetched: its content is a duplicate.
    assert (shard, pages, new, dropped, where) == ("1/5", "1", "0", "1", "nothing new written")
    assert int(skipped) >= 5  # the start page's links, moved.html among them
    # One store per spider: the three plans never made stores of their own.
    state = collector.data_dir / "state"
    assert sorted(p.name for p in (state / "deltafetch").glob("*.sqlite")) == ["docs.sqlite"]
    assert sorted(p.name for p in (state / "contenthash").glob("*.sqlite")) == ["docs.sqlite"]


@pytest.mark.timeout(240)
def test_a_site_past_the_cap_is_covered_over_rounds_each_within_the_cap(
        collector: Collector, fake_docs_factory) -> None:
    docs = fake_docs_factory(sites=1, pages=40)
    collector.configure(docs_urls=[f"{docs.url()}/site0/"],
                        spiders={"docs": {"max_pages_per_site": 10}})
    # The site: the root and 40 pages (page0 is the root's mirror, index.html another), flaky.
    site = {"/site0/", "/site0/index.html", "/site0/flaky.html"} | {
        f"/site0/page{i}.html" for i in range(40)}
    seen: set[str] = set()
    rounds = 0
    while seen != site:
        rounds += 1
        assert rounds <= 5, f"not covered after 5 rounds: missing {sorted(site - seen)}"
        before = counts(docs)
        crawl_round("docs", collector.config_path)
        fetched = fetched_since(docs, before)
        assert len(fetched) <= 10, fetched  # ≤ cap pages per site per round
        # Each page at most once a round (flaky.html: its 500, then the retry).
        assert all(n == (2 if p.endswith("flaky.html") else 1) for p, n in fetched.items()), \
            fetched
        assert "/site0/" in fetched  # the start page, every round
        seen |= set(fetched)
    assert rounds >= 4
    urls = {item["url"].split("/site0/", 1)[1] for item in collector.items("docs")}
    assert {f"page{i}.html" for i in range(1, 40)} <= urls


def shard_home(tmp_path: Path, name: str, starts: list[str], shard: str) -> Collector:
    home = Collector(tmp_path / name)
    home.configure(docs_urls=starts)
    crawl_round("docs", home.config_path, shard=shard)
    return home


@pytest.mark.timeout(240)
def test_per_shard_stores_of_an_earlier_version_are_merged_once_losing_nothing(
        tmp_path: Path, fake_docs_factory) -> None:
    docs = fake_docs_factory(sites=4, pages=6)
    starts = [f"{docs.url()}/site{k}/" for k in range(4)]
    # What an earlier version left: docs-0of2 and docs-1of2 with their own stores and items.
    upgraded = Collector(tmp_path / "upgraded")
    upgraded.configure(docs_urls=starts)
    state = upgraded.data_dir / "state"
    old: dict[str, list[Path]] = {"deltafetch": [], "contenthash": []}
    for i in (0, 1):
        home = shard_home(tmp_path, f"old{i}", starts, f"{i}/2")
        source = home.data_dir / "state"
        delta = state / "deltafetch" / f"docs-{i}of2" / "deltafetch.sqlite"
        content = state / "contenthash" / f"docs-{i}of2.sqlite"
        for path, kind in ((delta, "deltafetch"), (content, "contenthash")):
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / kind / "docs.sqlite", path)
            old[kind].append(path)
        shutil.copytree(home.data_dir / "items", upgraded.data_dir / "items", dirs_exist_ok=True)
    before_items = upgraded.items("docs")
    assert len(before_items) == 4 * 7
    expected = {kind: sum(rows(p) for p in paths) for kind, paths in old.items()}
    links = sum(rows(p, "links") for p in old["deltafetch"])

    before = counts(docs)
    crawl_round("docs", upgraded.config_path, shard="0/3")
    crawl_round("docs", upgraded.config_path, shard="1/3")  # the merged-in memory serves all
    assert upgraded.items("docs") == before_items  # nothing written twice
    assert set(fetched_since(docs, before)) == {"/site0/", "/site1/", "/site3/"}
    # Merged, then moved aside — never deleted; and nothing of them lost.
    for paths in old.values():
        for path in paths:
            assert not path.exists()
            (aside,) = merged(path)
            assert rows(aside) > 0
    assert rows(state / "deltafetch" / "docs.sqlite") >= expected["deltafetch"]
    assert rows(state / "deltafetch" / "docs.sqlite", "links") >= links
    assert rows(state / "contenthash" / "docs.sqlite") == expected["contenthash"] == 4 * 7

    # A kill after the merge committed and before the rename leaves the old file in place: the
    # next start merges it again, which changes nothing, and moves it aside.
    (aside,) = merged(old["contenthash"][0])
    shutil.copyfile(aside, old["contenthash"][0])
    crawl_round("docs", upgraded.config_path, shard="2/3")
    assert not old["contenthash"][0].exists()
    assert len(merged(old["contenthash"][0])) == 2
    assert rows(state / "contenthash" / "docs.sqlite") == 4 * 7
    assert upgraded.items("docs") == before_items


@pytest.mark.timeout(180)
def test_reset_switches_forget_for_one_run_and_the_summary_says_what_happened(
        collector: Collector, fake_docs_factory) -> None:
    docs = fake_docs_factory(sites=1, pages=6)
    collector.configure(docs_urls=[f"{docs.url()}/site0/"])
    result = collector.crawl("docs")
    assert result.returncode == 0, result.stderr[-3000:]
    shard, _, new, skipped, dropped, where = summary(result.stderr)
    assert (shard, new, skipped, dropped) == ("0/1", "7", "0", "2")  # 2 mirrors of the root
    assert where.startswith(str(collector.data_dir / "items" / "docs" / "docs-0of1-"))
    assert Path(where).is_file()

    # -a deltafetch_reset=1: every page fetched again, but the content is known: 0 new items.
    before = counts(docs)
    result = collector.crawl("docs", None, "-a", "deltafetch_reset=1")
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(fetched_since(docs, before)) == 9  # root, index.html, page0..5, flaky
    assert summary(result.stderr)[2:4] == ("0", "0")
    # The memory was kept (and updated): the next plain run skips again.
    before = counts(docs)
    result = collector.crawl("docs")
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(fetched_since(docs, before)) == {"/site0/"}
    # -s DELTAFETCH_RESET=1 with -s CONTENTHASH_RESET=1: everything collected and written anew.
    result = collector.crawl("docs", None, "-s", "DELTAFETCH_RESET=1",
                             "-s", "CONTENTHASH_RESET=1")
    assert result.returncode == 0, result.stderr[-3000:]
    assert summary(result.stderr)[2] == "7"
    assert len(collector.items("docs")) == 14

    bad = collector.crawl("docs", None, "-a", "deltafetch_reset=maybe")
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("scrapy crawl: -a deltafetch_reset='maybe' is not valid: "
                                  "expected 1 or 0 (true/false, yes/no)")
