"""The real docs pages in tests/data/docs, what each one holds, and how to read back
from Markdown what a converter kept: used by tests/scraper/docpages/test_docs_markdown.py and
benchmarks/markdown.py alike.

Expectations come from the fixture HTML read independently of any converter (every ``<pre>``'s
text, every ``<table>``'s shape) or are written out here per page (languages, headings, the
site furniture that must not leak into ``markdown`` or ``text``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import lxml.html

from tests.support.fakes.data import DOCS_PAGES

FIXTURES = DOCS_PAGES


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

# A fence, after the indentation of a list item and the "> " of a quote it sits in.
_FENCE = re.compile(r"^((?:> ?| )*)(`{3,})([^`\s]*)$")
_PIPE = re.compile(r"(?<!\\)\|")
_QUOTED = re.compile(r"^(?:> ?)+")
_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


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
    """The lines outside fenced code, the quote marks of a quote (a callout) taken off: a
    heading or a table in a callout is read as one."""
    lines, inside = [], None
    for line in markdown.split("\n"):
        fence = _FENCE.match(line)
        if fence and inside is None:
            inside = fence.group(1) + fence.group(2)
        elif inside is not None and line == inside:
            inside = None
        elif inside is None:
            lines.append(_QUOTED.sub("", line))
    return lines


def pipe_tables(markdown: str) -> list[list[list[str]]]:
    """GFM tables: a header line, a delimiter line (``---|---``, outer pipes optional), then
    the lines with a pipe; each row as its cells."""
    lines = outside_code(markdown)
    tables: list[list[list[str]]] = []
    i = 1
    while i < len(lines):
        if not (_DELIMITER.match(lines[i]) and "|" in lines[i] and "|" in lines[i - 1]):
            i += 1
            continue
        table = [cells(lines[i - 1])]
        i += 1
        while i < len(lines) and _PIPE.search(lines[i]):
            table.append(cells(lines[i]))
            i += 1
        tables.append(table)
    return tables


def cells(line: str) -> list[str]:
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
    return [cell.strip() for cell in _PIPE.split(line)]


def html_tables(html: str) -> list[tuple[int, int]]:
    """(rows, columns) of every table outside a code block's line-number table."""
    root = lxml.html.fromstring(html)
    shapes = []
    for table in root.iter("table"):
        rows = [row for row in table.iter("tr")]
        shapes.append((len(rows), max(len(row.xpath("td|th")) for row in rows)))
    return shapes


def fixture_html(fixture: Fixture) -> str:
    return (FIXTURES / f"{fixture.name}.html").read_text(encoding="utf-8")

