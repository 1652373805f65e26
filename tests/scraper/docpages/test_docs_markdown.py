"""Docs pages as Markdown: the real pages in tests/data/docs, as their sites served them
(tests/support/docs_fixtures.py says what each holds), and pages built to break a converter."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from typing import Any

import lxml.html
import pytest
from markdown_it import MarkdownIt
from parsel import Selector

from benchmarks.markdown import CONTENDERS
from scraper.docpages.extract import extract_page
from scraper.docpages.markdown import MAX_NESTING
from scraper.items import DocPageItem, content_hash
from tests.support.collector import REPO_ROOT, Collector
from tests.support.docs_fixtures import (
    PAGES,
    Fixture,
    fenced_blocks,
    fixture_html,
    html_tables,
    outside_code,
    pipe_tables,
    pre_texts,
)
from tests.support.fakes.docs import FIXTURE_LAST_MODIFIED
from tests.support.incrawler import crawl_round

PAGE_URL = "https://docs.example.org/guide/page.html"
IDS = [page.name for page in PAGES]

@pytest.fixture(scope="module", params=PAGES, ids=IDS)
def page(request: pytest.FixtureRequest) -> tuple[Fixture, str, Any]:
    fixture = request.param
    html = fixture_html(fixture)
    return fixture, html, extract_page(Selector(text=html), PAGE_URL)


def test_every_code_block_byte_exact_with_its_language(page) -> None:
    fixture, html, doc = page
    expected = pre_texts(html)
    assert len(expected) == len(fixture.languages)
    assert fenced_blocks(doc.markdown) == list(zip(fixture.languages, expected, strict=True))


def test_headings_in_order(page) -> None:
    fixture, _, doc = page
    lines = [line for line in outside_code(doc.markdown) if re.match(r"#{1,6} ", line)]
    assert [(len(line.split(" ", 1)[0]), line.split(" ", 1)[1]) for line in lines] == \
        fixture.headings
    assert doc.headings == [text for level, text in fixture.headings if level <= 4]


def test_tables_keep_rows_and_columns(page) -> None:
    fixture, html, doc = page
    tables = pipe_tables(doc.markdown)
    shapes = []
    for table in tables:
        # A headerless table (docutils) has an empty header line that is not one of its rows.
        rows = table[1:] if not any(table[0]) else table
        shapes.append((len(rows), len(table[0])))
        assert all(len(row) == len(table[0]) for row in table)
    assert shapes == html_tables(html)
    header, first = fixture.table
    assert any(table[0] == header and table[1] == first for table in tables), tables


def test_no_site_furniture_in_markdown_or_text(page) -> None:
    fixture, _, doc = page
    for label in fixture.furniture:
        assert label not in doc.markdown, label
        assert label not in doc.text, label


def test_metadata_and_text(page) -> None:
    fixture, _, doc = page
    assert doc.canonical_url == fixture.canonical_url
    assert doc.lang == fixture.lang
    assert doc.last_modified == fixture.last_modified
    assert doc.text and "  " not in doc.text and doc.text == doc.text.strip()
    assert doc.title
    if fixture.nested:
        assert fixture.nested in doc.markdown.split("\n")


def test_code_inside_a_list_item_is_indented_as_markdown_requires() -> None:
    html = fixture_html(PAGES[0])
    markdown = extract_page(Selector(text=html), PAGE_URL).markdown
    assert "\n  ```ini\n  [build_ext]\n  use_system_sqlite_config = True\n  ```\n" in markdown


def convert(body: str) -> Any:
    return extract_page(Selector(text=f"<html><body><main>{body}</main></body></html>"),
                        "https://h.example/docs/a/page.html")


def test_constructs_the_fixtures_lack() -> None:
    doc = convert(
        '<div class="admonition note"><p class="admonition-title">Note</p><p>Mind it.</p></div>'
        "<dl><dt>timeout</dt><dd><p>Seconds.</p></dd></dl>"
        '<table><thead><tr><th>Name</th><th>Example</th></tr></thead><tbody><tr><td>a|b</td>'
        '<td><div class="highlight-python"><pre>x = 1\n\n  y = 2\n</pre></div></td></tr>'
        "</tbody></table>"
        '<p><img src="../img/d.png" alt="Diagram"> <a href="/x">see <code>a`b</code></a> '
        "<strong> bold </strong>and *stars*</p>"
        "<pre><code class=\"language-md\">```\nfence\n```</code></pre>"
        '<ol start="3"><li>three</li><li>four<ul><li>deep</li></ul></li></ol>')
    assert doc.markdown == (
        "> **Note**\n>\n> Mind it.\n\n"
        "**timeout**\n\n: Seconds.\n\n"
        "- **Name**: a|b\n\n  **Example**:\n\n  ```python\n  x = 1\n\n    y = 2\n  ```\n\n"
        "![Diagram](https://h.example/docs/img/d.png) [see ``a`b``](https://h.example/x) "
        "**bold** and \\*stars\\*\n\n"
        "````md\n```\nfence\n```\n````\n\n"
        "3. three\n4. four\n   - deep")


# Code blocks the walker reads in one call (markdown.Walker.code_kind): tokens with classes and
# colour styles, nested, a <br>, Sphinx's line numbers, a leading newline, a Doxygen fragment.
_PLAIN_CODE_BLOCKS = (
    '<pre>\n<span></span><span class="kn">import</span> <span class="nn">os</span>\n</pre>',
    '<div class="highlight-python"><pre><span class="linenos">1</span><span class="k">def</span>'
    ' <span class="nf">f</span>():\n<span class="linenos">2</span>    <span class="k">pass'
    '</span>\n</pre></div>',
    '<pre><code class="language-ts"><span class="line"><span style="color:#F97583">const'
    '</span><span style="color:#E1E4E8"> a </span></span>\n<a href="/x">b</a> *_`</code></pre>',
    "<pre>first<br>second<br/><span>third</span> <i>fourth</i></pre>",
    '<div class="fragment"><span>a</span>\n  \n<span>b</span></div>',
    '<pre><span class="lnt">1\n</span>code <span class="lnt">2\n</span>more</pre>',
)


@pytest.mark.parametrize("block", _PLAIN_CODE_BLOCKS)
def test_a_code_block_read_in_one_call_is_what_the_walk_writes(block: str) -> None:
    """A comment in the block sends it through the element-by-element walk, which writes the
    same (a comment is never shown): markdown, text and fidelity must not tell them apart."""
    walked = block.replace("</pre>", "<!-- walk --></pre>", 1) if "</pre>" in block else \
        block.replace("</div>", "<!-- walk --></div>", 1)
    fast, slow = convert(f"<p>Before.</p>{block}<p>After.</p>"), \
        convert(f"<p>Before.</p>{walked}<p>After.</p>")
    assert "walk" not in slow.markdown
    assert (fast.markdown, fast.text, fast.fidelity) == (slow.markdown, slow.text, slow.fidelity)
    assert fast.fidelity.code_blocks == 1


def test_deeply_nested_and_huge_pages_never_raise() -> None:
    deep = convert("<div>" * 1600 + "<p>deep inside</p>" + "</div>" * 1600)
    assert deep.text == "deep inside" and deep.markdown == "deep inside"
    # 1,000 lists are 2,000 elements deep, about as deep as libxml2 builds a tree at all.
    lists = convert("<ul><li>" * 1000 + "bottom" + "</li></ul>" * 1000)
    assert lists.markdown.endswith("bottom")
    # Beyond MAX_NESTING containers render flat: indentation stays bounded.
    widest = max(len(line) - len(line.lstrip()) for line in lists.markdown.split("\n"))
    assert widest <= 2 * MAX_NESTING
    many = convert("<ul>" + "<li>item</li>" * 100_000 + "</ul>")
    assert many.markdown.count("- item") == 100_000
    spans = convert("<p>" + "<em>" * 1500 + "x" + "</em>" * 1500 + "</p>")
    assert "x" in spans.markdown


@pytest.mark.timeout(90)
def test_the_docs_spider_writes_markdown_items(collector: Collector, fake_docs) -> None:
    """The real spider, in a round in this process, against the fake docs host serving the
    fixture pages byte-exact."""
    urls = [f"{fake_docs.url()}/fixtures/{page.name}/" for page in PAGES]
    collector.configure(docs_urls=urls, spiders={"docs": {"max_pages_per_site": 1}})
    crawl_round("docs", collector.config_path)
    items = {item["url"]: item for item in collector.items("docs")}
    assert sorted(items) == sorted(urls)
    for fixture, url in zip(PAGES, urls, strict=True):
        item = items[url]
        html = fixture_html(fixture)
        assert [code for _, code in fenced_blocks(item["markdown"])] == pre_texts(html)
        assert item["headings"] == [text for level, text in fixture.headings if level <= 4]
        assert item["lang"] == fixture.lang
        assert item["canonical_url"] == fixture.canonical_url
        assert FIXTURE_LAST_MODIFIED == "Sat, 01 Aug 2026 10:00:00 GMT"
        assert item["last_modified"] == "2026-08-01T10:00:00Z"


def test_markdown_benchmark_runs_and_reports_every_contender(tmp_path) -> None:
    """Only that it runs end to end and reports: no figure is looked at here."""
    out = tmp_path / "markdown.json"
    result = subprocess.run([sys.executable, "-m", "benchmarks.markdown", "--scale", "tiny",
                             "--out", str(out)], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads(out.read_text())
    assert set(results["contenders"]) | set(results["skipped"]) == set(CONTENDERS)
    assert "walker" in results["contenders"] and "walker ours" in result.stdout


def test_content_hash_takes_own_site_links_by_path_and_sees_code_changes() -> None:
    def item(origin: str, markdown: str) -> DocPageItem:
        return DocPageItem(url=f"{origin}/docs/page.html", title="T", headings=["T"],
                           markdown=markdown.format(origin=origin), text="ignored")

    page = "# T\n\n[Next]({origin}/docs/next.html) ![d](<{origin}/a b.png>)\n\n```py\nx = 1\n```"
    here, mirror = item("https://a.example", page), item("http://b.example:8080", page)
    assert content_hash(here) == content_hash(mirror)
    for changed in (page.replace("next.html", "other.html"), page.replace("x = 1", "x = 2"),
                    page.replace("x = 1", "x =  1")):
        assert content_hash(item("https://a.example", changed)) != content_hash(here)
    elsewhere = page.replace("[Next]({origin}", "[Next](https://c.example")
    assert content_hash(item("https://a.example", elsewhere)) != content_hash(here)
    # text is not hashed: markdown, from the same tree, already says it.
    assert content_hash(DocPageItem(here, text="other")) == content_hash(here)


def test_line_numbers_and_copy_buttons_go_code_tokens_stay() -> None:
    doc = convert(
        '<div class="highlight-python"><table class="highlighttable"><tr>'
        '<td class="linenos"><div class="linenodiv"><pre>1\n2</pre></div></td>'
        '<td class="code"><div class="highlight"><pre><span class="linenos">1</span>'
        '<span class="copy">a</span> = 1\n<span class="linenos">2</span>b = 2\n</pre>'
        '</div></td></tr></table></div><button class="copybtn">Copy</button>')
    assert doc.markdown == "```python\na = 1\nb = 2\n```"


def test_text_after_skipped_elements_comes_once_and_in_order() -> None:
    doc = convert('<h2><a href="#x">Foo <b>bar</b></a> baz<a class="headerlink" href="#h">¶</a>'
                  '</h2><p>a<button>Copy</button> b <span class="headerlink">¶</span>c</p>')
    assert doc.headings == ["Foo bar baz"]
    assert doc.text == "Foo bar baz a b c"
    assert doc.markdown == ("## [Foo **bar**](https://h.example/docs/a/page.html#x) baz\n\n"
                            "a b c")


def read_back(markdown: str) -> lxml.html.HtmlElement:
    """The Markdown as a CommonMark reader (GFM's tables and strikethrough on) renders it."""
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)
    return lxml.html.fromstring(f"<div>{rendered}</div>")


@pytest.mark.parametrize("text", [
    "impl !Send, and a bang! [not a link](nor this)",
    "__init__ and _private_ and snake_case_name",
    "*stars* **more** `ticks` \\back\\slash",
    "[label]: /looks-like-a-reference",
    "&amp; &#35; &copy; are entities, & alone is not",
    "<b>not a tag</b> and <https://not.an/autolink>",
    "~~not struck~~ and ~/.bashrc",
    "1. not a list",
    "# not a heading",
    "- nor an item",
])
def test_text_reads_back_as_the_same_text(text: str) -> None:
    """Text that CommonMark would read as markup comes out escaped: a reader gets the text."""
    markdown = convert(f"<p>{html.escape(text)}</p>").markdown
    assert read_back(markdown).text_content().strip() == text, markdown


def test_text_next_to_markup_keeps_its_meaning() -> None:
    """Where text meets inline markup: "!" before a link is text (rustdoc's ``impl !Send``), a
    link's text keeps its brackets and code, an image in a link stays an image, a heading's
    trailing "#" stays."""
    doc = convert('<h2>Issue #</h2><p>impl !<a href="/send">Send</a> for T</p>'
                  '<p><a href="/x">a[0] <code>b[1]</code></a> '
                  '<a href="/y"><img src="/badge.svg" alt="a]b"></a></p>')
    read = read_back(doc.markdown)
    assert read.findtext("h2") == "Issue #"
    first, second = read.findall("p")
    assert first.text_content() == "impl !Send for T" and first.find(".//img") is None
    assert [(a.get("href"), a.text_content()) for a in first.iter("a")] == \
        [("https://h.example/send", "Send")]
    links = second.findall("a")
    assert links[0].text_content() == "a[0] b[1]" and links[0].find("code").text == "b[1]"
    assert [(img.get("src"), img.get("alt")) for img in links[1].iter("img")] == \
        [("https://h.example/badge.svg", "a]b")]
