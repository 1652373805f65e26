"""Real pages of documentation generators beyond the five in tests/data/docs, kept in
tests/data/generators (tests/data/generators/README.md names each page's repository, branch,
path and commit), and the code a reader sees in each code block, read from the HTML on its own:
used by tests/scraper/docpages/test_docs_generators.py and benchmarks/markdown.py.

The reading of code here is a browser's, written independently of the converter: the text of a
``<pre>`` (or a Doxygen ``div.fragment``) as it lays it out, without what is drawn beside or
over the code and is not code (line numbers, by class or as ``user-select:none``, AsciiDoc
callouts, copy buttons, toggle labels, a highlighter's language and file-name labels), an empty
``div.line`` a blank line (Shiki's and Doxygen's CSS give it a line's height), the page read in
its light colour theme (a block drawn for the dark theme only is hidden by CSS).
"""

from __future__ import annotations

from dataclasses import dataclass

import lxml.html

from tests.support.paths import DATA

PAGES_DIR = DATA / "generators"

# What is drawn in or beside a code block but is not its code.
_NOT_CODE = {"linenos", "lineno", "linenodiv", "gutter", "lnt", "ln", "conum", "hideme",
             "language-id", "code-title"}
# Marks of a block drawn for one colour theme; the other one's copy is hidden by CSS.
_DARK = {"github-dark", "vp-code-dark", "theme-dark", "shiki-dark"}
_LIGHT = {"github-light", "vp-code-light", "theme-light", "shiki-light"}
_NOT_CODE_TAGS = {"button", "script", "style", "summary"}
# Elements a browser starts and ends a line at.
_BLOCK_TAGS = {"div", "p", "li", "tr", "table", "details", "ul", "ol", "dl", "dt", "dd",
               "section", "article", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6"}


@dataclass(frozen=True)
class GeneratorPage:
    name: str  # the file's name in tests/data/generators, without ".html"
    generator: str
    code_blocks: int  # as counted by reading the HTML (code_texts), checked by the tests
    headings: list[str]  # some of its h1-h4 headings, as the page shows them
    furniture: list[str]  # navigation, search, footers, hidden text: never in markdown or text
    content: list[str]  # text of the content that must be there


def _classes(element: lxml.html.HtmlElement) -> set[str]:
    return set((element.get("class") or "").split())


def _is_callout_label(element: lxml.html.HtmlElement) -> bool:
    before = element.getprevious()
    return (element.tag == "b" and before is not None and "conum" in _classes(before)
            and not (before.tail or "").strip())


def _read(element: lxml.html.HtmlElement, out: list[str]) -> None:
    for child in element:
        if not isinstance(child.tag, str):
            out.append(child.tail or "")
            continue
        if child.tag in _NOT_CODE_TAGS or _classes(child) & _NOT_CODE or _is_callout_label(child) \
                or "user-select:none" in (child.get("style") or "").replace(" ", ""):
            if "conum" in _classes(child) or _is_callout_label(child):
                # A callout is set off from the code by spaces that are not code either.
                while out and out[-1].endswith((" ", "\t")):
                    out[-1] = out[-1].rstrip(" \t")
            out.append(child.tail or "")
            continue
        block = child.tag in _BLOCK_TAGS
        if block and out and "".join(out) and not "".join(out).endswith("\n"):
            out.append("\n")
        if child.tag == "br":
            out.append("\n")
        before = len("".join(out))
        out.append(child.text or "")
        _read(child, out)
        if child.tag == "div" and "line" in _classes(child) and len("".join(out)) == before:
            out.append("\n")  # an empty line of code
        elif block and "".join(out) and not "".join(out).endswith("\n"):
            out.append("\n")
        out.append(child.tail or "")


def code_text(block: lxml.html.HtmlElement) -> str:
    if block.tag != "pre":
        # Doxygen: outside <pre> the whitespace between the line divs is not laid out.
        for line in block:
            if not (line.tail or "").strip():
                line.tail = None
        block.text = None if not (block.text or "").strip() else block.text
    out = [block.text or ""]
    if block.tag == "pre" and out[0].startswith("\n"):
        out[0] = out[0][1:]  # the HTML parser's rule: a newline right after <pre> is not text
    _read(block, out)
    return "".join(out).removesuffix("\n")


def dark_only(element: lxml.html.HtmlElement) -> bool:
    """Drawn for the dark colour theme alone: hidden in the light theme the page is read in.
    (``<html data-theme=dark>`` is the page's theme as a whole, not a copy.)"""
    for holder in (element, *element.iterancestors()):
        if holder.tag in ("body", "html"):
            break
        names = _classes(holder)
        if (names & _DARK and not names & _LIGHT) or holder.get("data-theme") == "dark":
            return True
    return False


def code_blocks(html: str) -> list[lxml.html.HtmlElement]:
    """The page's code blocks a reader is shown, in page order; a ``<pre>`` that holds only
    line numbers (the gutter column of a code table, or a ``<pre>`` inside it) is not one."""
    root = lxml.html.fromstring(html)
    blocks = root.xpath("//pre[not(ancestor::pre)] | "
                        "//div[contains(concat(' ', @class, ' '), ' fragment ')]")
    shown = []
    for block in blocks:
        if _classes(block) & _NOT_CODE or any(_classes(holder) & _NOT_CODE
                                              for holder in block.iterancestors()):
            continue  # a gutter: Pygments' td.linenos, Rouge's td.gutter
        if dark_only(block):
            continue
        gutter = block.xpath(".//*[contains(concat(' ', @class, ' '), ' lnt ')] | "
                             ".//*[contains(translate(@style, ' ', ''), 'user-select:none')]")
        if gutter and not code_text(block).strip():
            continue  # the line-number column of Chroma's code table
        shown.append(block)
    return shown


def code_labels(html: str) -> list[tuple[str, str]]:
    """Per code block, the language and the file name its highlighter draws in it (Shiki's
    ``div.language-id`` and ``div.code-title``), '' where it draws none."""
    def label(block: lxml.html.HtmlElement, name: str) -> str:
        found = block.xpath(f".//*[contains(concat(' ', @class, ' '), ' {name} ')]")
        return " ".join(found[0].text_content().split()) if found else ""

    return [(label(block, "language-id"), label(block, "code-title"))
            for block in code_blocks(html)]


def code_texts(html: str) -> list[str]:
    """The code of every code block on the page a reader is shown, in page order."""
    return [code_text(block) for block in code_blocks(html)]


def tab_panels(html: str) -> list[tuple[str, list[str]]]:
    """Each tab of the page's tab sets, in page order: its label as the tab strip shows it and
    the code of the blocks in its panel. WAI-ARIA tabs (Docusaurus, headless UI): a tablist's
    tabs and the tab panels after it, one per tab; MkDocs Material: a tab set's labels and its
    blocks. Tabs whose panel is empty are left out."""
    root = lxml.html.fromstring(html)
    tabs: list[tuple[str, list[str]]] = []
    for strip in root.xpath("//*[@role='tablist'] | "
                            "//div[contains(concat(' ', @class, ' '), ' tabbed-labels ')]"):
        if strip.get("role") == "tablist":
            labels = strip.xpath(".//*[@role='tab']")
            panels = strip.xpath(f"following::*[@role='tabpanel'][position() <= {len(labels)}]")
        else:
            labels = strip.xpath("./label")
            panels = strip.xpath("../div[contains(@class, 'tabbed-content')]"
                                 "/div[contains(@class, 'tabbed-block')]")
        for label, panel in zip(labels, panels, strict=True):
            if not panel.text_content().strip() and not panel.xpath(".//img"):
                continue  # an empty panel (a placeholder): nothing to write under its label
            codes = [code_text(pre) for pre in panel.xpath(".//pre[not(ancestor::pre)]")]
            tabs.append((" ".join(label.text_content().split()), codes))
    return tabs


def page_html(page: GeneratorPage) -> str:
    return (PAGES_DIR / f"{page.name}.html").read_text(encoding="utf-8")


PAGES = [
    GeneratorPage("rustdoc-dzahui-window", "rustdoc", 1,
                  ["Struct dzahui::simulation::dzahui_window::DzahuiWindow", "Fields",
                   "impl !Send for DzahuiWindow"],
                  ["Expand description", "Show 19 fields", "§", "Run\n"],
                  ["Holds an *instance* of OpenGL",
                   "### impl \\![Send](https://doc.rust-lang.org/1.67.0/core/marker/trait.Send.html)"
                   " for "]),
    GeneratorPage("mdbook-embedded-exceptions", "mdBook", 11, ["Exceptions"],
                  ["Press ← or → to navigate", "Toggle Table of Contents"],
                  ["Exceptions, and interrupts, are a hardware mechanism"]),
    GeneratorPage("gitbook-git-tips-stashing", "GitBook", 20, ["Stashing"],
                  ["No results matching", "Published with GitBook", "Type to search"],
                  ["Saving current state of tracked files without committing"]),
    GeneratorPage("mkdocs-readthedocs-fire-guide", "MkDocs readthedocs theme", 42,
                  ["The Python Fire Guide"],
                  ["Built with MkDocs", "Search docs", "« Previous"],
                  ["Python Fire"]),
    GeneratorPage("javadoc-either", "Javadoc", 0, ["Class Either<A,B>"],
                  ["JavaScript is disabled", "SEARCH", "Skip navigation links"],
                  ["Method Summary"]),
    GeneratorPage("typedoc-custom-themes", "TypeDoc", 4, ["Custom Themes"],
                  ["Generated using TypeDoc", "Preparing search index", "On This Page"],
                  ["defineTheme"]),
    GeneratorPage("doxygen-thread-pool-index", "Doxygen", 7, ["thread-pool"],
                  ["Generated by", "Loading...", "No Matches"],
                  ["A simple, *fast* and functional thread pool implementation"]),
    GeneratorPage("doxygen-thread-safe-queue", "Doxygen (class page, headings in table cells)", 0,
                  ["Public Types", "Public Member Functions", "Member Function Documentation"],
                  ["Generated by", "Loading...", "No Matches", "| ## "],
                  ["\n\n## Public Member Functions\n\n|  |  |\n| --- | --- |\n"]),
    GeneratorPage("antora-istio-cube", "Antora", 7, ["Code"],
                  ["Edit this Page", "Search the docs"],
                  ["Arquillian Cube"]),
    GeneratorPage("sphinx-book-pml-introduction", "sphinx-book-theme / Jupyter Book", 1, [],
                  ["Skip to main content", "Back to top", "Ctrl+K"],
                  []),
    GeneratorPage("vitepress-shiki-fuse-react", "VitePress + Shiki line spans", 11, [],
                  ["Return to top", "Sidebar Navigation"],
                  []),
    GeneratorPage("docusaurus-tabs-rocketmq-docker", "Docusaurus 2.4 <Tabs>", 10,
                  ["Run RocketMQ in Docker", "4.Start Broker and Proxy"],
                  ["Skip to main content", "Edit this page", "Copy code to clipboard",
                   "\n- Linux\n- Windows"],
                  ["**Linux**\n\n```code\n# Configure the broker's IP address\n"]),
    GeneratorPage("mkdocs-material-tabs-pymdownx-tabbed", "MkDocs Material content tabs", 12,
                  ["Tabbed", "Alternate Style", "Options"],
                  ["Initializing search", "Tab 1 Tab 2", "Preview HTML CSS"],
                  ["**Tab 1**\n\nMarkdown **content**.\n\nMultiple paragraphs.\n\n**Tab 2**"]),
    GeneratorPage("mkdocs-material-linenums-pymdownx-superfences",
                  "MkDocs Material, Pygments line numbers (pymdownx-inline spans)", 58,
                  ["SuperFences", "Showing Line Numbers", "Pygments Line Anchors and Spans"],
                  ["Initializing search", "Back to top", "Made with"],
                  ["```\nimport foo.bar\n```"]),
    GeneratorPage("starlight-expressive-code-commerce-cart-installation",
                  "Astro Starlight + Expressive Code, <starlight-tabs>", 10,
                  ["Cart Installation", "Install the packages", "Map the packages"],
                  ["Skip to content", "Edit page", "On this page", "Select theme"],
                  ["**NPM**\n\n```bash\nnpm install @dropins/tools @dropins/storefront-cart\n```"
                   "\n\n**CDN**\n\nindex.html\n\n```html\n<head>\n"]),
    GeneratorPage("hugo-docsy-evl-comparator", "Hugo + Docsy", 11,
                  ["Comparator", "Specific implementation for a Kid", "General implementation"],
                  ["The EVL Authors", "How to use EVL", "Ambiguity resolution"],
                  ["# Comparator\n\nCompare the elements\n\n",
                   "```java\nMethod2<Integer> interestComparator = new Method2<Integer>()\n"]),
    GeneratorPage("pdoc-pathier", "pdoc (source views with line numbers)", 41,
                  ["pathier", "Caveat:"],
                  ["View Source", "API Documentation", "built with"],
                  ["class Pathier(pathlib.Path):\n\n```\nclass Pathier(pathlib.Path):\n"
                   "    \"\"\"Subclasses"]),
    GeneratorPage("sphinx-rtd-theme3-makefile-rules", "sphinx_rtd_theme 3.x", 35,
                  ["书写规则", "规则举例", "自动生成依赖性"],
                  ["Search docs", "Built with", "Copyright", "View page source"],
                  ["```makefile\nfoo.o: foo.c defs.h       # foo模块\n    cc -c -g foo.c\n```"]),
    GeneratorPage("mkdocs-material-annotations", "MkDocs Material annotations", 6,
                  ["Annotations", "Using annotations", "in content tabs"],
                  ["Initializing search", "Made with", "Martin Donath"],
                  ["Lorem ipsum dolor sit amet, (1) consectetur adipiscing elit.\n\n1. ",
                   "I'm an annotation!"]),
    GeneratorPage("mkdocs-material-linenos-table-code-blocks",
                  "MkDocs Material, Pygments linenos=table, code annotations", 28,
                  ["Code blocks", "Adding annotations", "Adding line numbers"],
                  ["Initializing search", "Made with", "Martin Donath"],
                  ["````\n\n```\ndef bubble_sort(items):\n    for i in range(len(items)):\n",
                   "    - content.code.annotate # (1)!\n```\n\n1. "]),
    GeneratorPage("jekyll-just-the-docs-line-numbers",
                  "Jekyll just-the-docs, Rouge line-number tables inside <code>", 9,
                  ["Code snippets with line numbers", "Workarounds", "Examples"],
                  ["This site uses Just the Docs", "Back to top", "Edit this page on GitHub",
                   "UI Components"],
                  ["```ruby\n# Ruby code with syntax highlighting and fixed line numbers using "
                   "Liquid\nGitHubPages::Dependencies.gems.each do |gem, version|\n",
                   "```ruby\ndef foo\n  puts 'foo'\nend\n```"]),
    GeneratorPage("hugo-linenos-table-syntax-highlighting", "Hugo lineNos: table (Chroma lntable)",
                  7, ["Syntax highlighting", "Highlight shortcode", "Highlighting in code fences"],
                  ["What's on this Page", "File an Issue", "Hugo Sponsors", "Showcase"],
                  ["Gives this:\n\n```go\n// GetTitleFunc returns a func that can be used to "
                   "transform a string to\n"]),
    GeneratorPage("nextra-tabs-grpcity-proto-loader", "Nextra 3 <Tabs> (the selected panel only)",
                  9,
                  ["Proto loader", "Initialization and Installation", "Load PB & Modularize"],
                  ["Give us feedback", "Edit this page", "Scroll to top", "On This Page",
                   "The gRPCity Project"],
                  ["Initialize the project:\n\n**npm**\n\nTerminal\n\n```\nnpm init\n```"]),
    GeneratorPage("docusaurus-shiki-twoslash-rematch-installation",
                  "Docusaurus + Shiki twoslash (labels in the <pre>, a copy per colour theme)", 11,
                  ["Installation", "Step 1: Define models", "Step 4: View"],
                  ["```\nts\n", "```\nbash\n", "```\n./models", "Copy"],
                  ["**npm**\n\n```bash\nnpm install @rematch/core\n```\n\n**Yarn**",
                   "./models/count.ts\n\n```ts\nimport { createModel } from \"@rematch/core\";\n"
                   "import { RootModel } from \".\";\n\nexport const count"]),
    GeneratorPage("javadoc8-retrofit-query", "Javadoc 8 (navigation bars outside <nav>)", 7,
                  ["Annotation Type Query", "Required Element Summary", "Element Detail"],
                  ["Skip navigation links", "Prev Class", "No Frames", "All Classes",
                   "Summary:", "Copyright", "Square, Inc."],
                  ["Query parameter appended to the URL.", "- ---\n\n  ```\n  @Documented\n"]),
    GeneratorPage("doxygen-1-8-tinyxml2-index",
                  "Doxygen 1.8.13 (footer and title area outside <footer>, no #doc-content)", 11,
                  ["What it does.", "Whitespace Preservation (default)", "Contributors"],
                  ["Generated on", "by doxygen", "doxygen.png", "7.0.0"],
                  ["TinyXML-2 is a simple, small, efficient, C++ XML parser"]),
    GeneratorPage("sphinx-rtd-merged-cells-lists-tables",
                  "Sphinx + sphinx_rtd_theme 0.5 (grid tables with rowspan and colspan)", 1,
                  ["4.2.1. Grid Tables", "4.2.2. List Tables"],
                  ["Search docs", "Edit on GitHub", "Built with"],
                  ["| Inputs | Inputs | Output |\n| --- | --- | --- |\n| A | B | A or B |\n"
                   "| False | False | False |"]),
]
# Pages whose tabs test_each_tab_once_under_its_label reads.
TABBED = ["docusaurus-tabs-rocketmq-docker", "mkdocs-material-tabs-pymdownx-tabbed",
          "mkdocs-material-linenums-pymdownx-superfences",
          "starlight-expressive-code-commerce-cart-installation",
          "mkdocs-material-linenos-table-code-blocks", "nextra-tabs-grpcity-proto-loader"]
