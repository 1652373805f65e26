"""Docs pages as Markdown: the real pages in shared/fixtures/docs, as their sites served them.

Expectations come from the fixture HTML read independently of the converter (every ``<pre>``'s
text, every ``<table>``'s shape) or are written out here per page (languages, headings, the
site furniture that must not leak into ``markdown`` or ``text``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from parsel import Selector

from scraper.parsers.docs import extract_page
from scraper.parsers.markdown import MAX_NESTING
from tests.fakes.docs import FIXTURE_LAST_MODIFIED
from tests.support import Collector

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "docs"
PAGE_URL = "https://docs.example.org/guide/page.html"


@dataclass(frozen=True)
class Fixture:
    name: str
    languages: list[str]
    headings: list[tuple[int, str]]
    table: tuple[list[str], list[str]]  # a table's header and first data row, as Markdown
    furniture: list[str]  # navigation, footer, switchers: never in markdown or text
    canonical_url: str | None
    lang: str
    nested: str | None = None  # a nested list item's line, indented by its depth
    last_modified: str | None = None


PAGES = [
    Fixture(
        "01-sphinx-rtd-apsw-install",
        ["python", "console", "console", "shell", "shell", "ini", "ini", "console", "output"],
        [(1, "Installation and customization"), (2, "PyPI (recommended)"), (3, "Encryption"),
         (2, "Linux/BSD provided"), (2, "Source"), (3, "Verifying your download"),
         (2, "Building and customization"), (3, "Build process"), (3, "SQLite options"),
         (3, "Finding SQLite"), (3, "setup.py commands and their options"), (4, "build"),
         (4, "fetch"), (4, "build_ext"), (2, "Advice for packagers"), (2, "Testing")],
        (["", ""], ["Debian", "Install [python3-apsw](https://packages.debian.org/python3-apsw)"]),
        ["View page source", "Built with", "Previous", "Copyright and License",
         "Full Text Search Example/Tour", "Last updated on", "Roger Binns"],
        "https://rogerbinns.github.io/apsw/install.html", "en",
        last_modified="2026-07-26"),
    Fixture(
        "03-sphinx-furo-manim-configuration",
        ["sh", "text", "sh"],
        [(1, "CLI flags and configuration"), (2, "Command Line Interface"),
         (3, "Some useful flags"), (3, "All supported flags"), (2, "custom_config")],
        (["flag", "abbr", "function"], ["`--help`", "`-h`", "Show the help message and exit"]),
        ["Skip to content", "Back to top", "Made with", "placed in the public domain",
         "Manim’s structure", "On this page", "Example Scenes", "¶"],
        None, "en",
        nested="  - `-so` will save the final frame to an image and show it."),
    Fixture(
        "09-mkdocs-material-instructor-extracting-tables",
        ["python"] * 4,
        [(1, "Extracting Tables using GPT-Vision"),
         (2, "Building the Custom Type for Markdown Tables"), (2, "Defining the Table Class"),
         (2, "Extracting Tables from Images"), (2, "Practical Example"),
         (3, "Top 10 Grossing Apps in October 2023 (Ireland) for Android Platforms"),
         (3, "Top 10 Grossing Apps in October 2023 (Ireland) for iOS Platforms")],
        (["Rank", "App Name", "Category"], ["1", "Google One", "Productivity"]),
        ["Skip to content", "Initializing search", "Jobs Board (External)",
         "Receipt Data Extraction with GPT-4", "Jason Liu", "Made with", "Back to top",
         "Was this page helpful", "User-Defined Bulk Classification", "¶"],
        "https://python.useinstructor.com/examples/extracting_tables/", "en"),
    Fixture(
        "11-docusaurus-immer-array-methods",
        ["javascript"] * 8,
        [(1, "Array Methods Plugin"), (2, "Overview"), (2, "Installation"),
         (2, "Mutating Methods"), (2, "Non-Mutating Methods"),
         (3, "Subset Operations (Return Drafts)"),
         (3, "Transform Operations (Return Base Values)"), (3, "Primitive-Returning Methods"),
         (2, "Methods NOT Overridden"), (2, "Callback Behavior"),
         (2, "Method Return Behavior Summary"), (2, "When to Use"), (2, "Performance Benefit")],
        (["Method", "Returns", "Description"], ["`push()`", "New length",
                                                "Adds elements to the end"]),
        ["Skip to main content", "Support Ukraine", "Edit this page", "Michel Weststrate",
         "On this page", "Map and Set", "Auto freezing", "中文", "\u200b"],
        "https://immerjs.github.io/immer/array-methods", "en"),
    Fixture(
        "13-vitepress-fusejs-getting-started",
        ["sh"] * 4 + ["js", "js", "html", "html", "typescript", "js", "js", "js"],
        [(1, "Getting Started"), (2, "Installation"), (4, "Importing"), (4, "CDN"),
         (4, "Deno"), (2, "Quick Start"), (2, "Builds")],
        (["", "UMD", "CommonJS", "ES Module"], ["**Full**", "fuse.js", "fuse.cjs", "fuse.mjs"]),
        ["Skip to content", "Main Navigation", "Become a Sponsor", "v7.6.0-beta.0",
         "Sidebar Navigation", "Using Fuse with React", "Return to top", "Appearance",
         "\u200b"],
        None, "en-US"),
]
IDS = [page.name for page in PAGES]

# A fence, after the indentation of a list item and the "> " of a quote it sits in.
_FENCE = re.compile(r"^((?:> ?| )*)(`{3,})([^`\s]*)$")
_PIPE = re.compile(r"(?<!\\)\|")


def pre_texts(html: str) -> list[str]:
    """Every ``<pre>``'s text as a browser shows it: ``<br>`` is a line break."""
    root = lxml.html.fromstring(html)
    texts = []
    for pre in root.iter("pre"):
        for br in pre.iter("br"):
            br.tail = "\n" + (br.tail or "")
        texts.append("".join(pre.itertext()).removesuffix("\n"))
    return texts


def fenced_blocks(markdown: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block, its list indentation and quote marks taken off
    again."""
    blocks, lines, i = [], markdown.split("\n"), 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, marks, language = opening.groups()
        body, i = [], i + 1
        while lines[i] != indent + marks:
            line = lines[i]
            assert line.startswith(indent) or line == indent.rstrip(), (indent, line)
            body.append(line[len(indent):])
            i += 1
        blocks.append((language, "\n".join(body)))
        i += 1
    return blocks


def outside_code(markdown: str) -> list[str]:
    lines, inside = [], None
    for line in markdown.split("\n"):
        fence = _FENCE.match(line)
        if fence and inside is None:
            inside = fence.group(1) + fence.group(2)
        elif inside is not None and line == inside:
            inside = None
        elif inside is None:
            lines.append(line)
    return lines


def pipe_tables(markdown: str) -> list[list[list[str]]]:
    tables: list[list[list[str]]] = []
    current: list[list[str]] | None = None
    for line in outside_code(markdown):
        if line.startswith("| ") and line.endswith(" |"):
            cells = [cell.strip() for cell in _PIPE.split(line[1:-1])]
            if current is None:
                current = []
                tables.append(current)
            if not all(set(cell) == {"-"} for cell in cells):
                current.append(cells)
        else:
            current = None
    return tables


def html_tables(html: str) -> list[tuple[int, int]]:
    """(rows, columns) of every table outside a code block's line-number table."""
    root = lxml.html.fromstring(html)
    shapes = []
    for table in root.iter("table"):
        rows = [row for row in table.iter("tr")]
        shapes.append((len(rows), max(len(row.xpath("td|th")) for row in rows)))
    return shapes


@pytest.fixture(scope="module", params=PAGES, ids=IDS)
def page(request: pytest.FixtureRequest) -> tuple[Fixture, str, Any]:
    fixture = request.param
    html = (FIXTURES / f"{fixture.name}.html").read_text(encoding="utf-8")
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
    html = (FIXTURES / "01-sphinx-rtd-apsw-install.html").read_text(encoding="utf-8")
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
def test_scrapy_crawl_docs_writes_markdown_items(collector: Collector, fake_docs) -> None:
    """The real spider against the fake docs host serving the fixture pages byte-exact."""
    urls = [f"{fake_docs.url()}/fixtures/{page.name}/" for page in PAGES]
    collector.configure(docs_urls=urls, spiders={"docs": {"max_pages_per_site": 1}})
    result = collector.crawl("docs", timeout=90)
    assert result.returncode == 0, result.stderr[-3000:]
    items = {item["url"]: item for item in collector.items("docs")}
    assert sorted(items) == sorted(urls)
    for fixture, url in zip(PAGES, urls, strict=True):
        item = items[url]
        html = (FIXTURES / f"{fixture.name}.html").read_text(encoding="utf-8")
        assert [code for _, code in fenced_blocks(item["markdown"])] == pre_texts(html)
        assert item["headings"] == [text for level, text in fixture.headings if level <= 4]
        assert item["lang"] == fixture.lang
        assert item["canonical_url"] == fixture.canonical_url
        assert item["last_modified"] == "2026-08-01T10:00:00Z"  # FIXTURE_LAST_MODIFIED
        assert FIXTURE_LAST_MODIFIED
