"""The ``docs`` spider against the fake docs host: its rules in real crawls in this process
(tests/support/incrawler.py), the memory limit (a property of the worker process) through the real
``scrapy crawl docs``."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import time
from collections import Counter

import pytest

from scraper.docpages.fidelityrecord import FIELDS as FIDELITY_FIELDS
from scraper.docpages.fidelityrecord import FORMS
from scraper.items import DocPageItem, content_hash
from tests.support.collector import REPO_ROOT, Collector
from tests.support.fakes.docs import ORPHAN_SENTENCE, SCRIPT_MARKER, SPECIAL_SENTENCE, STYLE_MARKER
from tests.support.incrawler import crawl_round

PAGE_PATH = re.compile(r"^/site(\d+)/page(\d+)\.html$")
# Link texts that appear only in the <nav> of every fake page.
NAV_ONLY = ("Jump ahead", "Absolute link", "Section link", "Private area", "Outside the site",
            "Write to us", "Manual (PDF)", "Sometimes broken")
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def request_counts(docs) -> Counter[str]:
    """Requests the fake docs host answered, by path (query ignored)."""
    return Counter(r["path"] for r in docs.stats()["requests"])


def crawl_ok(collector: Collector, *args: str) -> dict:
    """``scrapy crawl docs ARGS``: exit 0, and the round's stats."""
    result = collector.crawl("docs", None, *args, timeout=90)
    assert result.returncode == 0, result.stderr[-3000:]
    return collector.stats("docs")


def round_ok(collector: Collector, **spider_args: str) -> dict:
    return crawl_round("docs", collector.config_path, **spider_args)


@pytest.mark.timeout(90)
def test_docs_crawl_scope_robots_cycles_mirrors_gzip_retry_and_fields(collector: Collector,
                                                                      fake_docs_factory) -> None:
    docs = fake_docs_factory(sites=3, pages=15)
    base = docs.url()
    # site2 exists and is linked from site1's pages, but is not a start URL.
    collector.configure(docs_urls=[f"{base}/site0/", f"{base}/site1/"])
    stats = round_ok(collector)
    counts = request_counts(docs)

    # Same host, under the start path only; robots.txt obeyed; nothing else.
    for path in counts:
        assert path == "/robots.txt" or re.match(r"^/site[01]/", path), path
    assert counts["/robots.txt"] == 1
    assert not any("private" in path for path in counts), "robots.txt Disallow ignored"
    assert stats.get("robotstxt/forbidden", 0) or stats.get(
        "downloader/exception_type_count/scrapy.exceptions.IgnoreRequest", 0)
    assert not any(path.endswith((".pdf", ".png")) for path in counts)
    # Link cycles terminate, and no page is fetched twice.
    for site in (0, 1):
        for index in range(15):
            assert counts[f"/site{site}/page{index}.html"] == 1, (site, index)
        assert counts[f"/site{site}/"] == 1
        assert counts[f"/site{site}/index.html"] == 1
        # The flaky page answers 500 once, then succeeds on retry.
        assert counts[f"/site{site}/flaky.html"] == 2
    assert stats["retry/count"] >= 2

    items = collector.items("docs")
    urls = [item["url"] for item in items]
    assert len(urls) == len(set(urls))
    assert all(url.startswith((f"{base}/site0/", f"{base}/site1/")) for url in urls)
    for site in (0, 1):
        # /siteK/, /siteK/index.html and /siteK/page0.html are one page: one item.
        front = [i for i in items
                 if i["title"] and i["title"].endswith(f"Site {site} Docs, page 0")]
        assert len(front) == 1, [i["url"] for i in front]
        assert front[0]["url"] == f"{base}/site{site}/"
        flaky = [i for i in items if i["url"] == f"{base}/site{site}/flaky.html"]
        assert len(flaky) == 1 and flaky[0]["title"] == f"Flaky page of site {site}"
        assert flaky[0]["text"] == "Recovered after an error. Back"
    # 15 pages (page0 = the site root) + flaky, per site.
    assert len(items) == 2 * 16
    assert stats["contenthash/dropped"] >= 2
    assert stats["item_scraped_count"] == len(items)
    # No request went to GitHub, so the GitHub budget was never opened (an idle connection
    # in every docs worker otherwise).
    assert not (collector.data_dir / "state" / "budget.sqlite").exists()

    # Bodies came gzipped and were decoded.
    assert stats["httpcompression/response_count"] >= 2 * 16

    special = html.unescape(SPECIAL_SENTENCE)
    for item in items:
        assert set(item) == {"url", "title", "headings", "text", "markdown", "canonical_url",
                             "lang", "last_modified", "spider", "shard", "collected_at",
                             "content_hash", "version", *FIDELITY_FIELDS}
        assert item["spider"] == "docs" and item["shard"] == "0/1"
        for shown, kept, _, _ in FORMS:
            assert item[kept] == item[shown], (item["url"], shown)
        assert ISO_UTC.match(item["collected_at"])
        assert re.fullmatch(r"[0-9a-f]{64}", item["content_hash"])
        text = item["text"]
        assert SCRIPT_MARKER not in text and STYLE_MARKER not in text
        for label in NAV_ONLY:
            assert label not in text, (label, item["url"])
        assert "  " not in text and text == text.strip()
        if PAGE_PATH.match(item["url"][len(base):]) or item["url"].endswith("/"):
            assert special in text  # entities unescaped, non-ASCII intact
            assert item["headings"][0] == item["title"]
            assert len(item["headings"]) > 1
            assert "generation 0" not in text  # footer is not main text
    assert any("Use a < b && c to" in item["text"] for item in items)  # <code>, unescaped
    # UTF-8 in the file, not \u escapes.
    raw = b"".join(path.read_bytes() for path in collector.item_files("docs"))
    assert "naïve café — ünïcode".encode() in raw
    assert b"\\u00ef" not in raw


def test_doc_content_hash_is_title_headings_markdown_not_url() -> None:
    page = {"title": "T", "headings": ["T", "A"], "markdown": "# T\n\n## A\n\nbody"}
    a = DocPageItem(url="http://h/site0/", collected_at="1", shard="0/1", **page)
    b = DocPageItem(url="http://h/site0/index.html", collected_at="2", shard="1/2", **page)
    assert content_hash(a) == content_hash(b)
    for field in page:
        changed = {**page, field: ["B"] if field == "headings" else "B"}
        assert content_hash(DocPageItem(url="http://h/site0/", **changed)) != content_hash(a)


@pytest.mark.timeout(90)
def test_max_pages_per_site_caps_each_site(collector: Collector, fake_docs_factory) -> None:
    docs = fake_docs_factory(sites=2, pages=15)
    collector.configure(docs_urls=[f"{docs.url()}/site0/", f"{docs.url()}/site1/"],
                        spiders={"docs": {"max_pages_per_site": 4}})
    stats = round_ok(collector)
    counts = request_counts(docs)
    for site in (0, 1):
        pages = {p for p in counts if p.startswith(f"/site{site}/")}
        assert 1 < len(pages) <= 4, pages
        assert sum(1 for i in collector.items("docs") if f"/site{site}/" in i["url"]) <= 4
    assert stats["sitecap/held_back"] >= 2


@pytest.mark.timeout(120)
def test_second_run_skips_known_pages_and_refresh_after_refetches(collector: Collector,
                                                                  fake_docs_factory) -> None:
    docs = fake_docs_factory(sites=2, pages=12)
    start_urls = [f"{docs.url()}/site0/", f"{docs.url()}/site1/"]
    collector.configure(docs_urls=start_urls)
    first = round_ok(collector)
    first_files = collector.items_by_file("docs")
    first_items = sum(map(len, first_files.values()))
    assert first_items == 2 * 13
    after_first = request_counts(docs)

    second = round_ok(collector)
    after_second = request_counts(docs)
    assert second["deltafetch/skipped"] > 0
    assert not second.get("item_scraped_count") and not second.get("itemstore/written")
    assert collector.items_by_file("docs") == first_files  # no new item file, no new line
    for path, count in after_second.items():
        if path in ("/site0/", "/site1/", "/robots.txt"):
            # Start URLs are listing pages: read every round.
            assert count == after_first[path] + 1, path
        else:
            # Every other page was fetched in the first run only.
            assert count == after_first[path], path
            expected = 2 if path.endswith("flaky.html") else 1  # 500, then the retry
            assert count == expected, (path, count)
    assert first["deltafetch/stored"] >= first_items

    # refresh_after: once it has passed, the same pages are fetched again (content unchanged:
    # no new items).
    collector.configure(docs_urls=start_urls, spiders={"docs": {"refresh_after": "1s"}})
    time.sleep(1.2)
    third = round_ok(collector)
    after_third = request_counts(docs)
    refetched = [p for p in after_third if PAGE_PATH.match(p)
                 and after_third[p] == after_second[p] + 1]
    assert len(refetched) == 2 * 12, sorted(refetched)
    assert not third.get("deltafetch/skipped")
    assert not third.get("itemstore/written")
    assert third["contenthash/dropped"] >= 2 * 12
    assert collector.items_by_file("docs") == first_files


@pytest.mark.timeout(90)
def test_changed_pages_give_new_items_after_refresh(collector: Collector, fake_docs_factory
                                                    ) -> None:
    docs = fake_docs_factory(sites=1, pages=6)
    collector.configure(docs_urls=[f"{docs.url()}/site0/"],
                        spiders={"docs": {"refresh_after": "1s"}})
    round_ok(collector)
    first = collector.items("docs")
    docs.control(generation=1)
    time.sleep(1.2)
    stats = round_ok(collector)
    items = collector.items("docs")
    new = items[len(first):]
    # Every page changed (its footer too, but that is not content: the text did).
    assert stats["itemstore/written"] == len(first) - 1  # flaky.html did not change
    assert {i["content_hash"] for i in new}.isdisjoint(i["content_hash"] for i in first)
    for line in (collector.data_dir / "items" / "docs").glob("*.jsonl"):
        for raw in line.read_text(encoding="utf-8").splitlines():
            json.loads(raw)


@pytest.mark.timeout(120)
def test_crawl_started_from_a_large_process_is_not_stopped_by_the_memory_limit(
        collector: Collector, fake_docs_factory) -> None:
    """``execve`` keeps the parent's peak RSS (ru_maxrss): a launcher above MEMUSAGE_LIMIT_MB
    must not make the worker it starts close at once with ``memusage_exceeded``."""
    docs = fake_docs_factory(sites=1, pages=5)
    collector.configure(docs_urls=[f"{docs.url()}/site0/"])
    launcher = ("import os, sys\n"
                "ballast = bytearray(320 * 1024 * 1024)\n"  # resident: above the 200 MB limit
                "ballast[::4096] = b'x' * len(ballast[::4096])\n"
                "os.execv(sys.executable, [sys.executable, '-m', 'scrapy', 'crawl', 'docs'])\n")
    result = subprocess.run([sys.executable, "-c", launcher], cwd=REPO_ROOT,
                            env=collector.env(), capture_output=True, text=True, timeout=100)
    assert result.returncode == 0, result.stderr[-2000:]
    stats = collector.stats("docs")
    assert stats["finish_reason"] == "finished"
    assert stats["memusage/startup"] < 200 * 1024 * 1024
    assert len(collector.items("docs")) >= 5


@pytest.mark.timeout(90)
def test_memory_checked_by_one_timer_without_a_line_a_second_and_the_limit_closes_the_round(
        collector: Collector, fake_docs_factory) -> None:
    docs = fake_docs_factory(sites=1, pages=40, latency_ms=50)
    collector.configure(docs_urls=[f"{docs.url()}/site0/"])
    stats = crawl_ok(collector)  # a few seconds under the limit: checked every second
    assert stats["finish_reason"] == "finished"
    assert stats["memusage/max"] >= stats["memusage/startup"] > 1024 * 1024
    assert "Peak memory usage" not in collector.log("docs")
    # A limit every worker is over: the first check (at engine start) closes the round.
    stats = crawl_ok(collector, "-s", "MEMUSAGE_LIMIT_MB=1", "-s", "DELTAFETCH_RESET=1")
    assert stats["finish_reason"] == "memusage_exceeded"
    assert stats["memusage/limit_reached"] == 1
    assert collector.log("docs").count("Memory usage exceeded 1MiB") == 1


@pytest.mark.timeout(90)
def test_sitemaps_seed_the_crawl_with_pages_no_link_reaches(collector: Collector,
                                                             fake_docs_factory, caplog) -> None:
    """The docs spider reads the site's own sitemap.xml and robots.txt's Sitemap: line (a
    sitemap index of gzip sitemaps): the pages only they list are collected, those outside the
    start path, robots-disallowed or on another host are not asked for, and each page and
    sitemap is fetched once, robots.txt too."""
    docs = fake_docs_factory(sites=2, pages=6, sitemap=True)
    base = docs.url()
    collector.configure(docs_urls=[f"{base}/site0/"], spiders={"docs": {"sitemaps": True}})
    stats = round_ok(collector)
    counts = request_counts(docs)
    urls = {item["url"] for item in collector.items("docs")}
    for orphan in ("orphan.html", "hidden/orphan.html"):
        assert f"{base}/site0/{orphan}" in urls, orphan
        assert counts[f"/site0/{orphan}"] == 1
    orphan = next(item for item in collector.items("docs")
                  if item["url"] == f"{base}/site0/hidden/orphan.html")
    assert orphan["text"] == f"Orphan hidden/orphan.html {ORPHAN_SENTENCE}"
    for path in counts:
        assert path in ("/robots.txt", "/sitemap_index.xml") or path.startswith("/site0/"), path
    assert not any("private" in path or path.endswith(".pdf") for path in counts)
    assert all(count == 1 for path, count in counts.items() if not path.endswith("flaky.html"))
    assert counts["/site0/sitemap.xml"] == counts["/site0/sitemap-pages.xml.gz"] == 1
    assert stats["docs/sitemaps/read"] == 3  # the site's, the index, the gzip file
    assert len(urls) == 6 + 1 + 2  # the pages linked, flaky.html, the two orphans
    assert "not a sitemap" not in caplog.text and "sitemap not read" not in caplog.text

    # Turned off: link following only.
    collector.configure(docs_urls=[f"{base}/site0/"], spiders={"docs": {"sitemaps": False}})
    before = request_counts(docs)
    round_ok(collector, deltafetch_reset="1")
    new = request_counts(docs) - before
    assert not any("sitemap" in path or "orphan" in path for path in new), new
