"""What a reader is shown of a page's content, and what is drawn in a code block but is not its
code. The converter (scraper/docpages/markdown.py) and the fidelity check, which reads the same
tree on its own (scraper/docpages/shown.py), both take these definitions from here, so what
one leaves out the other does not count.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from lxml import etree

# Never content: what these hold is not text a reader sees.
INVISIBLE = frozenset({"script", "style", "noscript", "template", "nav", "footer", "svg", "form",
                       "button", "input", "select", "textarea", "iframe", "object", "canvas",
                       "head", "title", "meta", "link"})
# Generators' line numbers inside or beside a code block: not part of the code (Pygments,
# Prism, Doxygen, Rouge's gutter, Chroma's ``lnt``/``ln``).
LINE_NUMBER_CLASSES = frozenset({"linenos", "lineno", "linenodiv", "line-numbers-rows", "gutter",
                                 "lnt", "ln", "hljs-ln-numbers"})
# A highlighter's labels inside the ``<pre>`` (Shiki twoslash: the language, hidden by CSS, and
# the file name, drawn as the block's header): they say what the code is, they are not code.
LANGUAGE_LABEL = "language-id"
TITLE_LABEL = "code-title"
CODE_LABEL_CLASSES = frozenset({LANGUAGE_LABEL, TITLE_LABEL})
# Twoslash draws the compiler's answers between the code's lines (errors, the types a query
# asks for); copying the block gives the code without them.
TWOSLASH_ANNOTATIONS = frozenset({"error", "error-behind", "meta-line"})
# rustdoc's toggle labels ("Expand description", "Show 19 fields"), drawn by CSS.
HIDDEN_LABEL = "hideme"
# Tables that lay out a code block beside its line numbers: the code, not a table.
CODE_TABLE_CLASSES = frozenset({"highlighttable", "rouge-table", "lntable", "hljs-ln"})
# Code blocks that are not a ``<pre>``: Doxygen's fragments, one ``div.line`` per line.
CODE_DIV_CLASSES = frozenset({"fragment"})
# A line of its own in code, even when empty: Shiki's and Doxygen's CSS give ``div.line`` a
# minimum height, so an empty one is a blank line on screen.
CODE_LINE_CLASS = "line"

# The tags an element with no attribute at all may still be left out for (invisible ones, a
# page's header, a MkDocs tab strip's label): to every other rule here and in tabs.py and
# callouts.py, an element with no attribute of another tag is content.
HIDDEN_BARE_TAGS = INVISIBLE | {"header", "label"}

_TABLE_ROWS = etree.XPath("./tr | ./tbody/tr")


def classes(element: etree._Element) -> set[str]:
    value = element.get("class")
    return set(value.split()) if value else set()


def not_content(element: etree._Element, tag: str, names: AbstractSet[str]) -> bool:
    """Outside code, what is never the page's content: invisible elements, the page's header,
    line numbers beside code, rustdoc's toggle labels ("Expand description")."""
    return (tag in INVISIBLE or is_page_header(element, tag) or bool(names & LINE_NUMBER_CLASSES)
            or HIDDEN_LABEL in names)


def is_page_header(element: etree._Element, tag: str) -> bool:
    """A page's header (site name, search); an article's own header holds its title."""
    return tag == "header" and element.find(".//h1") is None


def unselectable(element: etree._Element) -> bool:
    """Drawn in code but left out when it is copied: Chroma's line numbers with inline styles
    (Hugo's default ``noClasses``) carry no class, only ``user-select:none``."""
    style = element.get("style")
    return style is not None and "user-select" in style and \
        "user-select:none" in style.replace(" ", "")


def is_code_callout(element: etree._Element, names: AbstractSet[str]) -> bool:
    """An AsciiDoc callout in code: ``<b class=conum>(1)</b>``, or the ``<i class=conum>`` of
    font icons with the ``<b>(1)</b>`` right after it."""
    if "conum" in names:
        return True
    if element.tag != "b":
        return False
    previous = element.getprevious()
    return previous is not None and "conum" in classes(previous) and not previous.tail


def not_code(element: etree._Element, names: AbstractSet[str], block: etree._Element) -> bool:
    """Drawn in the code block ``block`` but not its code: line numbers, labels, twoslash's
    annotations, AsciiDoc callouts, rustdoc's toggle labels, controls."""
    tag = element.tag
    return (not isinstance(tag, str) or tag.lower() in INVISIBLE
            or bool(names & LINE_NUMBER_CLASSES) or HIDDEN_LABEL in names
            or bool(names & CODE_LABEL_CLASSES) or unselectable(element)
            or is_code_callout(element, names)
            or bool(names & TWOSLASH_ANNOTATIONS and "twoslash" in classes(block)))


def label_text(element: etree._Element) -> str:
    return " ".join("".join(element.itertext()).split())


def squeeze(text: str) -> str:
    """Text without its whitespace: what the fidelity check compares, since where a browser
    and Markdown put spaces and line breaks around markup differs."""
    return "".join(text.split())


def is_numbered_code(table: etree._Element) -> bool:
    """A table laying out a code block beside its line numbers without a class saying so
    (Chroma's ``lineNos: table`` with inline styles): one row, two cells, a ``<pre>`` in each,
    the first holding line numbers only."""
    rows = _TABLE_ROWS(table)
    if len(rows) != 1:
        return False
    cells = rows[0].findall("td")
    gutter = cells[0].find(".//pre") if len(cells) == 2 else None
    if gutter is None or cells[1].find(".//pre") is None:
        return False
    numbers = gutter.find("code")
    numbers = gutter if numbers is None else numbers
    return len(numbers) > 0 and not (numbers.text or "").strip() and all(
        unselectable(line) or classes(line) & LINE_NUMBER_CLASSES for line in numbers)


def is_code_table(table: etree._Element) -> bool:
    return bool(classes(table) & CODE_TABLE_CLASSES) or is_numbered_code(table)
