"""Docs for LLMs, end to end through the user's commands: ``scrapy crawl docs`` over real
generator pages and a generated site that changes, ``python -m runner catalog``, ``status`` and
``export --format llms`` (with ``--date``)."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.collector import Collector, next_second
from tests.support.fakes.launcher import start_fake_docs
from tests.support.generator_pages import PAGES, PAGES_DIR
from tests.support.incrawler import crawl_log, crawl_round

REAL = [page for page in PAGES if page.code_blocks][:4]
# A crafted page whose code cannot be a fenced block (a <pre> inside a heading), and whose
# table and callout sit deeper than the converter nests containers, so it writes them flat.
DEEP = 13  # lists and their items: 26 containers
CODE_IN_HEADING = ("<html><head><title>Odd</title></head><body><main><h2>Run <pre>make all</pre>"
                   "</h2><p>Then wait.</p>" + "<ul><li>" * DEEP
                   + "<table><tr><th>Name</th></tr><tr><td>x</td></tr></table>"
                   "<div class='admonition note'><p class='admonition-title'>Note</p>"
                   "<p>Deep down.</p></div>" + "</li></ul>" * DEEP + "</main></body></html>")
ODD_FIDELITY = {"code_blocks": 1, "code_blocks_exact": 0, "tabs": 0, "tabs_labelled": 0,
                "tables": 1, "tables_kept": 0, "callouts": 1, "callouts_kept": 0}


@dataclass
class Crawled:
    collector: Collector
    base: str
    between: str  # a moment after the first crawl's items and before the second's
    log: str  # what both rounds logged

    @property
    def db(self) -> Path:
        return self.collector.data_dir / "catalog.sqlite"


def _run(collector: Collector, *args: str) -> str:
    result = collector.runner(*args, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("llms")
    pages = tmp / "pages"
    pages.mkdir()
    for page in REAL:
        shutil.copy(PAGES_DIR / f"{page.name}.html", pages)
    (pages / "code-in-heading.html").write_text(CODE_IN_HEADING, encoding="utf-8")
    docs = start_fake_docs(tmp / "fake-docs", sites=1, pages=5, fixtures=pages)
    try:
        base = docs.url()
        collector = Collector(tmp / "home")
        collector.configure(docs_urls=[f"{base}/site0/", f"{base}/fixtures/code-in-heading/",
                                       *(f"{base}/fixtures/{page.name}/" for page in REAL)],
                            spiders={"docs": {"max_pages_per_site": 6, "refresh_after": 0}})
        log: list[str] = []
        for generation in (0, 1):
            docs.control(generation=generation)
            with crawl_log() as lines:  # the docs spider's rounds, in this process
                crawl_round("docs", collector.config_path)
            log.extend(lines)
            if generation == 0:
                between = max(item["collected_at"] for item in collector.items("docs"))
                next_second()  # the second round's stamps come after this one's
            _run(collector, "catalog")
        yield Crawled(collector, base, between, "\n".join(log))
    finally:
        docs.stop()


def test_items_carry_fidelity_and_a_page_below_it_is_logged_once(crawled: Crawled) -> None:
    items = crawled.collector.items("docs")
    by_url = {item["url"]: item for item in items}
    for page in REAL:
        item = by_url[f"{crawled.base}/fixtures/{page.name}/"]
        assert (item["code_blocks"], item["code_blocks_exact"]) == (page.code_blocks,) * 2
        assert (item["tabs"], item["tables"], item["callouts"]) == \
            (item["tabs_labelled"], item["tables_kept"], item["callouts_kept"])
    odd = f"{crawled.base}/fixtures/code-in-heading/"
    assert {name: by_url[odd][name] for name in ODD_FIDELITY} == ODD_FIDELITY
    log = crawled.log
    # Both crawls fetched it; the second found its content unchanged and did not log it again.
    line = (f"docs fidelity: {odd} holds 0 of its 1 code blocks byte-exact, 0 of its 1 tables "
            "with every cell under its header, 0 of its 1 callouts under their titles in its "
            "Markdown")
    assert log.count(line) == 1, log[-3000:]


def test_catalog_and_status_show_per_site_fidelity(crawled: Crawled) -> None:
    out = _run(crawled.collector, "catalog")
    for page in REAL:
        n = page.code_blocks
        assert (f"docs fidelity: {crawled.base}/fixtures/{page.name}/: {n}/{n} code "
                f"blocks byte-exact (100.0%)") in out, out
        assert "below 100%" not in next(line for line in out.splitlines()
                                        if f"/fixtures/{page.name}/:" in line)
    odd = (f"{crawled.base}/fixtures/code-in-heading/: 0/1 code blocks byte-exact (0.0%), "
           "0/1 tables with every cell under its header (0.0%), 0/1 callouts under their "
           "titles (0.0%) on 1 pages, 1 pages below 100% (code blocks 1, tables 1, callouts 1)")
    assert odd in out, out
    # status exits 3 here, its runner never having run; what it shows is the point.
    status = json.loads(crawled.collector.runner("status", "--json").stdout)
    sites = {site["site"]: site for site in status["docs_fidelity"]}
    assert sites[f"{crawled.base}/site0/"]["pages"] >= 5
    odd = sites[f"{crawled.base}/fixtures/code-in-heading/"]
    assert odd["pages_below"] == 1
    assert odd["below"] == {"code_blocks": 1, "tabs": 0, "tables": 1, "callouts": 1}
    assert odd["counts"] == ODD_FIDELITY
    shown = crawled.collector.runner("status").stdout
    assert "docs fidelity (catalog):" in shown
    assert (f"  {crawled.base}/fixtures/code-in-heading/\n    0/1 code blocks byte-exact (0.0%)\n"
            "    0/1 tables with every cell under its header (0.0%)\n"
            "    0/1 callouts under their titles (0.0%)\n"
            "    on 1 pages, 1 pages below 100% (code blocks 1, tables 1, callouts 1)\n") in shown


def test_export_llms_writes_the_index_the_full_text_and_a_file_per_page(crawled: Crawled,
                                                                        tmp_path: Path) -> None:
    out = _run(crawled.collector, "export", "--format", "llms", "--out", str(tmp_path))
    conn = sqlite3.connect(crawled.db)
    latest = {url: (title, markdown) for url, title, markdown in conn.execute(
        "SELECT p.url, c.title, c.markdown FROM docs_pages p JOIN docs_contents c "
        "USING (url, content_hash)")}
    order = [url for (url,) in conn.execute("SELECT url FROM docs_pages ORDER BY first_seen, url")]
    site = tmp_path / f"{crawled.base.split('//')[1].replace(':', '_')}-site0"
    index = (site / "llms.txt").read_text(encoding="utf-8").split("\n")
    pages = [url for url in order if url.startswith(f"{crawled.base}/site0/")]
    assert index[0] == f"# {latest[f'{crawled.base}/site0/'][0]}"
    assert index[2].startswith("> ") and "## Pages" in index
    links = [line for line in index if line.startswith("- [")]
    assert [line.split("](", 1)[1].split(")", 1)[0] for line in links] == pages
    full = (site / "llms-full.txt").read_text(encoding="utf-8")
    tokens = json.loads((site / "tokens.json").read_text(encoding="utf-8"))
    for url in pages:
        title, markdown = latest[url]
        document = f"# {title}\n\nURL: {url}\n\n{markdown}\n"  # as its .md file holds it
        estimate = math.ceil(len(document) / 4)
        assert tokens["pages"][url] == estimate
        assert f"# {title}\n\nURL: {url}\nTokens: about {estimate:,}\n\n{markdown}\n" in full
        assert f"- [{title}]({url}): about {estimate:,} tokens" in index
    assert tokens["tokens"] == sum(tokens["pages"].values())
    assert tokens["estimate"] == "ceil(characters / 4)"
    assert (site / "index.md").read_text(encoding="utf-8").startswith("# ")
    assert len(list(site.rglob("*.md"))) == len(pages)
    assert f"{crawled.base}/site0/: {len(pages)} pages, about {tokens['tokens']:,} tokens" in out


def test_export_llms_at_a_date_gives_each_page_as_it_was(crawled: Crawled,
                                                         tmp_path: Path) -> None:
    conn = sqlite3.connect(crawled.db)
    changed = [url for (url,) in conn.execute("SELECT url FROM docs_pages WHERE versions = 2")]
    assert changed
    url = changed[0]
    (old,), (new,) = [row for row in conn.execute(
        "SELECT c.markdown FROM docs_versions v JOIN docs_contents c USING (url, content_hash) "
        "WHERE v.url = ? ORDER BY v.first_seen", (url,))]
    assert old != new
    rel = (url[len(f"{crawled.base}/site0/"):] or "index.html").replace(".html", ".md")
    then = _site_dir(crawled, tmp_path / "then", "--date", crawled.between)
    assert (then / rel).read_text(encoding="utf-8").endswith(f"{old}\n")
    now = _site_dir(crawled, tmp_path / "now")
    assert (now / rel).read_text(encoding="utf-8").endswith(f"{new}\n")
    before = crawled.collector.runner("export", "--format", "llms", "--out",
                                      str(tmp_path / "none"), "--date", "2000-01-01")
    assert before.returncode == 0 and "no docs pages in the catalog by 2000-01-01" in before.stdout
    bad = crawled.collector.runner("export", "--format", "llms", "--out", str(tmp_path),
                                   "--date", "yesterday")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "'yesterday' is not a date" in bad.stderr


def _site_dir(crawled: Crawled, out: Path, *args: str) -> Path:
    _run(crawled.collector, "export", "--format", "llms", "--out", str(out), *args)
    (site,) = [path for path in out.iterdir() if path.name.endswith("-site0")]
    return site


ATOM = "{http://www.w3.org/2005/Atom}"


def test_atom_feed_of_changed_pages_with_a_diff_per_entry(crawled: Crawled) -> None:
    from lxml import etree

    from runner.catalog.docsfeeds import diff_summary

    feeds = crawled.collector.data_dir / "feeds"
    name = f"docs-{crawled.base.split('//')[1].replace(':', '_')}-site0.atom"
    # Only the generated site changed: the real pages' sites have no feed.
    assert sorted(path.name for path in feeds.glob("docs-*.atom")) == [name]
    feed = etree.parse(str(feeds / name)).getroot()
    conn = sqlite3.connect(crawled.db)
    changes = {url: (old, new) for url, old, new in conn.execute(
        "SELECT v.url, o.markdown, n.markdown FROM docs_pages p "
        "JOIN docs_versions v ON v.url = p.url AND v.content_hash = p.content_hash "
        "JOIN docs_contents n ON n.url = v.url AND n.content_hash = v.content_hash "
        "JOIN docs_versions f ON f.url = p.url AND f.first_seen < v.first_seen "
        "JOIN docs_contents o ON o.url = f.url AND o.content_hash = f.content_hash "
        "WHERE p.versions = 2")}
    entries = feed.findall(f"{ATOM}entry")
    assert len(entries) == len(changes) > 0
    updated = [entry.findtext(f"{ATOM}updated") for entry in entries]
    assert updated == sorted(updated, reverse=True)  # newest first
    for entry in entries:
        url = entry.find(f"{ATOM}link").get("href")
        summary, diff = diff_summary(*changes[url])
        assert entry.findtext(f"{ATOM}summary") == summary
        assert entry.findtext(f"{ATOM}content") == diff
        assert diff.startswith("--- before\n+++ after\n@@ ")


def test_page_paths_stay_under_the_site_and_never_collide(tmp_path: Path) -> None:
    from runner.catalog.llms import Site, page_path

    prefix = "https://docs.example.org/en/latest/"
    assert page_path(prefix, prefix) == "index.md"
    assert page_path(f"{prefix}topics/settings.html", prefix) == "topics/settings.md"
    assert page_path(f"{prefix}topics/", prefix) == "topics/index.md"
    assert page_path(f"{prefix}../../etc/passwd", prefix) == "etc/passwd.md"
    assert page_path(f"{prefix}a%20b/c:d.htm", prefix) == "a_b/c_d.md"
    site = Site(prefix, tmp_path)
    for url in (f"{prefix}faq", f"{prefix}faq.html", f"{prefix}faq?lang=de"):
        site.add(url, "FAQ", f"from {url}")
    site.finish()
    written = sorted(path.name for path in tmp_path.glob("faq*.md"))
    assert len(written) == 3 and "faq.md" in written
    bodies = {path.read_text(encoding="utf-8").rsplit("\n", 2)[-2]
              for path in tmp_path.glob("*.md")}
    assert bodies == {f"from {prefix}faq", f"from {prefix}faq.html", f"from {prefix}faq?lang=de"}
