"""Docs pages of generators beyond Sphinx, MkDocs Material, Docusaurus and VitePress: real pages
as their sites served them (tests/support/generator_pages.py), each code block byte-exact, headings
as
written, the content without the site around it."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, urljoin

import lxml.html
import pytest
from markdown_it import MarkdownIt
from parsel import Selector

from scraper.docpages.extract import extract_page, is_cookie_banner
from tests.support.docs_fixtures import fenced_blocks, pipe_tables
from tests.support.generator_pages import (
    PAGES,
    TABBED,
    GeneratorPage,
    code_labels,
    code_texts,
    page_html,
    tab_panels,
)

PAGE_URL = "https://docs.example.org/guide/page.html"
_UNSELECTABLE = "white-space:pre;-webkit-user-select:none;user-select:none;margin-right:0.4em"


@pytest.fixture(scope="module", params=PAGES, ids=[page.name for page in PAGES])
def page(request: pytest.FixtureRequest) -> tuple[GeneratorPage, str, Any]:
    fixture = request.param
    html = page_html(fixture)
    return fixture, html, extract_page(Selector(text=html), PAGE_URL)


def test_every_code_block_is_the_code_in_the_html(page) -> None:
    fixture, html, doc = page
    expected = code_texts(html)
    assert len(expected) == fixture.code_blocks
    assert [code for _, code in fenced_blocks(doc.markdown)] == expected


def test_headings_as_written_and_content_without_the_site(page) -> None:
    fixture, _, doc = page
    for heading in fixture.headings:
        assert heading in doc.headings, (heading, doc.headings)
    for label in fixture.furniture:
        assert label not in doc.markdown, label
        assert label not in doc.text, label
    for text in fixture.content:
        assert text in doc.markdown, text


def convert(body: str) -> str:
    return extract_page(Selector(text=f"<html><body><main>{body}</main></body></html>"),
                        PAGE_URL).markdown


@pytest.mark.parametrize("body, code", [
    ("<pre>\nfirst\nsecond</pre>", "first\nsecond"),          # HTML drops that newline
    ("<pre><code>\nblank first line</code></pre>", "\nblank first line"),
    ("<pre><code><div class='ec-line'>a</div><div class='ec-line'>  b</div></code></pre>",
     "a\n  b"),                                                 # a div per line
    ("<div class='highlight'><table class='lntable'><tr><td class='lntd'><pre><code>"
     "<span class='lnt'>1\n</span><span class='lnt'>2\n</span></code></pre></td>"
     "<td class='lntd'><pre><code class='language-go'>x := 1\ny := 2\n</code></pre></td></tr>"
     "</table></div>", "x := 1\ny := 2"),                       # Hugo lineNos: table
    ("<table class='rouge-table'><tr><td class='gutter gl'><pre class='lineno'>1\n2\n</pre></td>"
     "<td class='code'><pre>a\nb\n</pre></td></tr></table>", "a\nb"),  # Rouge, just-the-docs
    ("<pre><code class='hljs'><table class='hljs-ln'><tr><td class='hljs-ln-numbers'>"
     "<div data-line-number='1'></div></td><td class='hljs-ln-code'>one</td></tr><tr>"
     "<td class='hljs-ln-numbers'></td><td class='hljs-ln-code'>two</td></tr></table></code>"
     "</pre>", "one\ntwo"),                                    # a table inside <code>
    ("<pre><code>mvn test <b class='conum'>(1)</b>\nls</code></pre>", "mvn test\nls"),
    ("<figure class='highlight'><code class='language-ruby'><div class='table-wrapper'>"
     "<table class='rouge-table'><tbody><tr><td class='gutter gl'><pre class='lineno'>1\n2\n"
     "</pre><td class='code'><pre>a\nb\n</pre></table></div></code></figure>", "a\nb"),
    # Hugo's default noClasses: Chroma's line numbers carry only user-select:none (gohugo.io)
    (f"<pre><code><span style='display:flex;'><span style='{_UNSELECTABLE}'>1</span><span>"
     f"package main\n</span></span><span style='display:flex;'><span style='{_UNSELECTABLE}'>2"
     "</span><span>}</span></span></code></pre>", "package main\n}"),
    (f"<div class='highlight'><div style='color:#f8f8f2'><table style='border-spacing:0'><tr>"
     f"<td style='vertical-align:top'><pre><code><span style='{_UNSELECTABLE}'>1\n</span>"
     f"<span style='{_UNSELECTABLE}'>2\n</span></code></pre></td><td style='width:100%'><pre>"
     "<code class='language-go'>x := 1\ny := 2</code></pre></td></tr></table></div></div>",
     "x := 1\ny := 2"),
])
def test_code_markup_comes_out_as_its_code(body: str, code: str) -> None:
    assert [text for _, text in fenced_blocks(convert(body))] == [code]


@pytest.mark.parametrize("body, opening", [
    ("<div class='highlight-default'><pre>x = 1</pre></div>", "```python"),  # Sphinx
    ("<pre><code class='language-default' data-lang='default'>{% raw %}</code></pre>", "```"),
    ("<pre><code class='nextra-code' dir='ltr'>npm init</code></pre>", "```"),
    ("<figure><code class='language-ruby'><table class='rouge-table'><tr><td class='code'>"
     "<pre>puts 1</pre></td></tr></table></code></figure>", "```ruby"),
    (f"<table><tr><td><pre><code><span style='{_UNSELECTABLE}'>1</span></code></pre></td>"
     "<td><pre><code class='language-go'>x</code></pre></td></tr></table>", "```go"),
])
def test_language_of_a_block_as_its_generator_marked_it(body: str, opening: str) -> None:
    assert convert(body).split("\n")[0] == opening


@pytest.mark.parametrize("name", TABBED)
def test_each_tab_once_under_its_label(name: str) -> None:
    """Every tab of every tab set: its label as a line of its own, then its panel's code blocks,
    before the next tab's label; the strip of labels is not written as text."""
    html = page_html(next(page for page in PAGES if page.name == name))
    markdown = extract_page(Selector(text=html), PAGE_URL).markdown
    tabs = tab_panels(html)
    assert len(tabs) >= 2 and any(codes for _, codes in tabs)
    # A label line, also inside a quote (a tab set in an admonition).
    lines = [match.start() for match in re.finditer(r"^(?:> ?)*\*\*.+\*\*$", markdown, re.M)]
    position = -1
    for label, codes in tabs:
        position = re.compile(rf"^(?:> ?)*\*\*{re.escape(label)}\*\*$", re.M).search(
            markdown, position + 1).start()
        end = min((at for at in lines if at > position), default=len(markdown))
        start = markdown.rfind("\n", 0, position) + 1
        panel = [code for _, code in fenced_blocks(markdown[start:end])]
        assert panel[:len(codes)] == codes, label


@pytest.mark.parametrize("body, markdown", [
    # headless UI (Nextra): only the selected panel is rendered, the others are placeholders
    ("<div><div role='tablist'><button role='tab' id='t1' aria-selected='true'>pnpm</button>"
     "<button role='tab' id='t2'>npm</button></div><div>"
     "<div role='tabpanel' aria-labelledby='t1'><pre><code>pnpm add x</code></pre></div>"
     "<span role='tabpanel' aria-labelledby='t2' hidden></span></div></div>",
     "**pnpm**\n\n```\npnpm add x\n```"),
    # MkDocs Material's legacy tabs: each label before its content
    ("<div class='tabbed-set' data-tabs='1:2'><input checked id='a' type='radio'>"
     "<label for='a'>Python</label><div class='tabbed-content'><pre>print()</pre></div>"
     "<input id='b' type='radio'><label for='b'>C</label>"
     "<div class='tabbed-content'><pre>puts();</pre></div></div>",
     "**Python**\n\n```\nprint()\n```\n\n**C**\n\n```\nputs();\n```"),
    # a code block per colour theme (rehype-pretty-code), once; blocks that differ, each
    ("<div data-rehype-pretty-code-fragment=''><pre data-theme='light'><code>x = 1</code></pre>"
     "<pre data-theme='dark'><code>x = 1</code></pre></div>"
     "<div class='theme-light'><pre>y</pre></div><div class='theme-dark'><pre>y</pre></div>"
     "<pre data-theme='light'>a</pre><pre data-theme='dark'>b</pre>",
     "```\nx = 1\n```\n\n```\ny\n```\n\n```\na\n```\n\n```\nb\n```"),
])
def test_tabs_and_theme_copies(body: str, markdown: str) -> None:
    assert convert(body) == markdown


def test_heading_keeps_block_content_and_loses_its_permalink() -> None:
    markdown = convert("<h3 class='code-header'>impl&lt;T&gt; Foo for T<div class='where'>"
                       "where T: Send</div><a class='anchor' href='#impl'>§</a></h3>")
    assert markdown == "### impl\\<T> Foo for T where T: Send"


def test_cookie_rule_drops_banners_not_content_about_cookies() -> None:
    for banner in ("cookie-banner", "cookieconsent", "CybotCookiebotDialog", "cookie_notice"):
        assert is_cookie_banner(banner, set()), banner
    for content in ("cookies", "requests.cookies.RequestsCookieJar", "module-requests.cookies",
                    "cookie-jar", "set-cookie"):
        assert not is_cookie_banner(content, set()), content
    markdown = convert("<section id='cookies'><h2>Cookies</h2><p>Jar of cookies.</p></section>"
                       "<div id='cookie-consent'>We use cookies</div>")
    assert "Jar of cookies." in markdown and "We use cookies" not in markdown


def test_fidelity_fields_count_the_blocks_and_those_byte_exact(page) -> None:
    fixture, _, doc = page
    fidelity = doc.fidelity
    assert (fidelity.code_blocks, fidelity.code_blocks_exact) == (fixture.code_blocks,) * 2
    assert fidelity.complete, fidelity


def test_fidelity_counts_a_block_the_markdown_does_not_hold() -> None:
    from scraper.docpages.fidelity import measure

    markdown = "- item\n\n  ```python\n  x = 1\n\n  y = 2\n  ```\n\n> ```\n> quoted\n> ```"
    assert measure(markdown, ["x = 1\n\ny = 2", "quoted"]).complete
    lost = measure(markdown, ["x = 1\n\ny = 2", "quoted", "never written"])
    assert (lost.code_blocks, lost.code_blocks_exact, lost.complete) == (3, 2, False)
    assert measure("```\nx = 1\n```", ["x  =  1"]).code_blocks_exact == 0


@pytest.mark.parametrize("url, version", [
    ("https://docs.scrapy.org/en/latest/topics/settings.html", "latest"),
    ("https://pip.pypa.io/en/stable/", "stable"),
    ("https://docs.python.org/3/library/os.html", "3"),
    ("https://docs.sqlalchemy.org/en/20/orm/", "20"),
    ("https://example.org/istio-tutorial/1.9.x/advanced/cube.html", "1.9.x"),
    ("https://example.org/docs/v2.1/index.html", "v2.1"),
    ("https://example.org/guide/3.html", None),  # a page named 3, not a version
    ("https://example.org/guide/page.html", None),
])
def test_version_from_the_url(url: str, version: str | None) -> None:
    from scraper.docpages.extract import page_version

    assert page_version(Selector(text="<html><body><p>x</p></body></html>"), url) == version


def test_version_from_the_generators_switcher() -> None:
    from tests.support.docs_fixtures import PAGES as FIVE
    from tests.support.docs_fixtures import fixture_html

    docusaurus = next(page for page in FIVE if "docusaurus" in page.name)
    doc = extract_page(Selector(text=fixture_html(docusaurus)), PAGE_URL)
    assert doc.version == "current"  # <meta name="docsearch:version" content="current">


def test_latest_and_stable_of_one_page_are_one_item() -> None:
    """The same page served under /en/latest/ and /en/stable/ (Read the Docs' aliases of one
    build) hashes the same, so the content-hash dedup keeps one item; another version that says
    the same but links elsewhere in its own tree is still the same page of that version."""
    from scraper.items import DocPageItem, content_hash

    html = page_html(PAGES[3])  # MkDocs readthedocs theme: relative links all over the page
    items = {}
    for version in ("latest", "stable", "3.0"):
        url = f"https://docs.example.org/en/{version}/guide/index.html"
        doc = extract_page(Selector(text=html), url)
        assert doc.version == version
        assert f"](https://docs.example.org/en/{version}/" in doc.markdown
        items[version] = DocPageItem(url=url, title=doc.title, headings=doc.headings,
                                     markdown=doc.markdown)
    assert content_hash(items["latest"]) == content_hash(items["stable"]) == \
        content_hash(items["3.0"])
    other = DocPageItem(url="https://docs.example.org/en/stable/guide/index.html",
                        title=items["stable"]["title"], headings=items["stable"]["headings"],
                        markdown=items["latest"]["markdown"])  # links into another version
    assert content_hash(other) != content_hash(items["stable"])


def _page(name: str) -> GeneratorPage:
    return next(page for page in PAGES if page.name == name)


def read_markdown(markdown: str) -> lxml.html.HtmlElement:
    """The Markdown as a CommonMark reader (GFM's tables and strikethrough on) renders it."""
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)
    return lxml.html.fromstring(f"<div>{rendered}</div>")


def test_code_blocks_with_their_labels_inside_once_per_theme() -> None:
    """Shiki twoslash on Docusaurus draws each block twice, for the light and the dark theme,
    with its language (``div.language-id``) and its file name (``div.code-title``) inside the
    ``<pre>``: each block comes once, fenced with the label's language, the file name a line
    of its own right above it."""
    html = page_html(_page("docusaurus-shiki-twoslash-rematch-installation"))
    doc = extract_page(Selector(text=html), PAGE_URL)
    labels = code_labels(html)
    blocks = fenced_blocks(doc.markdown)
    assert len(lxml.html.fromstring(html).xpath("//pre")) == 2 * len(blocks) == 22
    assert all(language for language, _ in labels)
    assert [language for language, _ in blocks] == [language for language, _ in labels]
    titled = [(title, language, code) for (language, title), (_, code)
              in zip(labels, blocks, strict=True) if title]
    assert len(titled) == 6
    for title, language, code in titled:
        assert doc.markdown.count(f"\n\n{title}\n\n```{language}\n{code}\n```") == 1, title


def test_no_image_in_the_markdown_but_the_pages_own() -> None:
    """Text that ends in "!" right before a link (rustdoc's "impl !Send") must not read as an
    image: every image a CommonMark reader finds is one the page shows."""
    from tests.support.docs_fixtures import PAGES as FIVE
    from tests.support.docs_fixtures import fixture_html

    pages = [(page.name, page_html(page)) for page in PAGES] + \
        [(page.name, fixture_html(page)) for page in FIVE]
    bangs = 0
    for name, html in pages:
        markdown = extract_page(Selector(text=html), PAGE_URL).markdown
        shown = {unquote(urljoin(PAGE_URL, img.get("src", "").strip()))
                 for img in lxml.html.fromstring(html).iter("img")}
        for img in read_markdown(markdown).iter("img"):
            assert unquote(img.get("src")) in shown, (name, img.get("src"))
        bangs += markdown.count("\\![")
    assert bangs >= 4  # rustdoc's four "impl !Trait for" headings


def _layout(table: lxml.html.HtmlElement) -> list[list[str]]:
    """A table's cells on the grid a browser lays them out on, a merged cell's text in every
    position it covers (written here on its own, as the HTML spec's table model says)."""
    taken: dict[tuple[int, int], str] = {}
    rows = table.xpath("./tr | ./thead/tr | ./tbody/tr")
    for r, row in enumerate(rows):
        c = 0
        for cell in row.xpath("./td | ./th"):
            while (r, c) in taken:
                c += 1
            text = " ".join(cell.text_content().split())
            for down in range(int(cell.get("rowspan", "1"))):
                for right in range(int(cell.get("colspan", "1"))):
                    taken[(r + down, c + right)] = text
            c += int(cell.get("colspan", "1"))
    width = max(c for _, c in taken) + 1
    return [[taken.get((r, c), "") for c in range(width)] for r in range(len(rows))]


def test_merged_cells_stay_under_their_headers() -> None:
    """docutils' grid tables with ``rowspan`` and ``colspan``: a table of one-line cells is a
    pipe table with a merged cell in every position it covers; one whose cells hold blocks is
    the list form, a cell spanning rows in each row's item, one spanning columns once."""
    html = page_html(_page("sphinx-rtd-merged-cells-lists-tables"))
    markdown = extract_page(Selector(text=html), PAGE_URL).markdown
    grid, truth = [table for table in lxml.html.fromstring(html).iter("table")
                   if table.xpath(".//*[@rowspan or @colspan]")]
    assert _layout(truth) in pipe_tables(markdown)
    header, *rows = _layout(grid)
    assert rows[3] == ["body row 4", "Cells may span rows.", "Table cells contain body elements.",
                       "Table cells contain body elements."]
    assert ("- **Header row, column 1 (header rows optional)**: body row 4\n\n"
            "  **Header 2**: Cells may span rows.\n\n  **Header 3**:\n\n  - Table cells\n"
            "  - contain\n  - body elements.\n\n"
            "- **Header row, column 1 (header rows optional)**: body row 5\n\n"
            "  **Header 2**: Cells may also be empty: `-->`") in markdown
    assert "- **Header row, column 1 (header rows optional)**: body row 2\n\n" \
           "  **Header 2**: Cells may span columns.\n\n- " in markdown
    assert header[1:] == ["Header 2", "Header 3", "Header 4"]


def _fidelity(name: str, fool: Any = None) -> Any:
    from scraper.docpages.extract import is_boilerplate, main_content
    from scraper.docpages.fidelity import check

    selector = Selector(text=page_html(_page(name)))
    markdown = extract_page(selector, PAGE_URL).markdown
    return check(main_content(selector), fool(markdown) if fool else markdown, is_boilerplate)


def test_fidelity_drops_below_100_on_a_conversion_built_to_fool_it() -> None:
    """The record reads the page on its own, never the converter's walk: a conversion that
    takes a block's labels for code, writes each theme's copy, drops a tab's label, shifts a
    merged cell or loses a callout's title is below 100% in that form."""
    shiki = "docusaurus-shiki-twoslash-rematch-installation"
    full = _fidelity(shiki)
    assert (full.code_blocks, full.tabs) == (11, 8) and full.complete

    def labels_as_code(markdown: str) -> str:  # what the converter wrote before issue 42
        return re.sub(r"^```(\w+)$", r"```\n\1", markdown, flags=re.M)

    assert _fidelity(shiki, labels_as_code).code_blocks_exact == 0

    def twice(markdown: str) -> str:
        return re.sub(r"^(```\w*\n.*?\n```)$", r"\1\n\n\1", markdown, flags=re.M | re.S)

    assert _fidelity(shiki, twice).code_blocks_exact == 1  # only the first is the next block

    def unlabelled(markdown: str) -> str:
        return markdown.replace("**npm**\n\n", "").replace("**TypeScript**\n\n", "")

    fooled = _fidelity(shiki, unlabelled)  # one "npm" and three "TypeScript" labels gone
    assert (fooled.tabs_labelled, fooled.below()) == (4, ["tabs"])

    merged = "sphinx-rtd-merged-cells-lists-tables"
    full = _fidelity(merged)
    assert (full.tables, full.callouts) == (7, 1) and full.complete

    def shifted(markdown: str) -> str:  # rowspan and colspan dropped, as other converters do
        return markdown.replace("body row 4\n\n  **Header 2**: Cells may span rows.\n\n"
                                "  **Header 3**:\n\n  - Table cells\n  - contain\n"
                                "  - body elements.", "body row 4").replace(
            "| Inputs | Inputs | Output |", "| Inputs | Output |  |")

    assert _fidelity(merged, shifted).tables_kept == 5

    def untitled(markdown: str) -> str:
        return markdown.replace("  > **Note**\n  >\n", "")

    fooled = _fidelity(merged, untitled)
    assert (fooled.callouts_kept, fooled.below()) == (0, ["callouts"])


def test_fidelity_counts_what_the_converter_writes_flat() -> None:
    """A table and a callout nested deeper than the converter nests containers are written
    flat: shown, not kept. A <pre> in a heading is inline code: shown, not exact."""
    deep = 13
    doc = extract_page(Selector(text=(
        "<html><body><main><h2>Run <pre>make</pre></h2>" + "<ul><li>" * deep
        + "<table><tr><th>A</th></tr><tr><td>1</td></tr></table><aside class='admonition'>"
        "<p class='admonition-title'>Tip</p><p>Deep.</p></aside>" + "</li></ul>" * deep
        + "<table><tr><th>A</th></tr><tr><td>1</td></tr></table></main></body></html>")),
        PAGE_URL)
    fidelity = doc.fidelity
    assert (fidelity.code_blocks, fidelity.code_blocks_exact) == (1, 0)
    assert (fidelity.tables, fidelity.tables_kept, fidelity.callouts, fidelity.callouts_kept) \
        == (2, 1, 1, 0)


@pytest.mark.timeout(30)
def test_fidelity_reads_a_line_of_brackets_in_one_pass() -> None:
    """Forty thousand "[" in a table cell: the read-back pairs a line's brackets in one pass
    (a search for each one's closing bracket took 32 s on half as many) and the table is
    kept."""
    doc = extract_page(Selector(text="<html><body><main><table><tr><th>A</th></tr><tr><td>"
                                     + "[" * 40_000 + "</td></tr></table></main></body></html>"),
                       PAGE_URL)
    assert (doc.fidelity.tables, doc.fidelity.tables_kept) == (1, 1)
