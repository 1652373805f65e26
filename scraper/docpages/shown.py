"""What a reader is shown of a page's main content, read from the tree on its own: each code
block's code as a browser lays it out, each tab panel under its label, each table's cells on
their grid, each callout under its title. The fidelity check (:mod:`.fidelity`) holds the
converter's Markdown against this reading.

It shares with the converter only the definitions of what is not content (:mod:`.visible`,
:mod:`.tabs`, :mod:`.callouts`) and the page's own furniture rule (``skip``), never its walk:
a label the converter takes for code, a copy it writes twice or a cell it shifts is not in
this reading, so the page falls below 100% in its own record.

Cost: one ``iter`` over the candidates' tags finds them, an ancestor walk with a memo judges
each once; the text of a table cell, panel or callout is read from its own subtree, and each
code block is read once (:meth:`Reader.code`). Structures nested deeper than
the converter nests containers (:data:`MAX_DEPTH`) are counted and not read: the converter
writes them flat, so they are not kept, and reading them would cost depth × size.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from lxml import etree

from scraper.docpages.callouts import icon_title, is_callout, is_callout_title, is_layout_table
from scraper.docpages.tables import Grid, span, starts_cell
from scraper.docpages.tabs import is_tab_strip, is_theme_copy, tab_label
from scraper.docpages.visible import (
    CODE_DIV_CLASSES,
    CODE_LINE_CLASS,
    HIDDEN_BARE_TAGS,
    INVISIBLE,
    LINE_NUMBER_CLASSES,
    TITLE_LABEL,
    classes,
    is_code_callout,
    is_code_table,
    label_text,
    not_code,
    not_content,
    squeeze,
    unselectable,
)

Skip = Callable[[etree._Element], bool]

MAX_DEPTH = 24
"""Containers (lists, items, quotes, callouts, tables, cells) the converter nests before it
writes the rest flat: scraper/docpages/markdown.py's MAX_NESTING."""
PANEL_PREFIX = 32
"""Characters of a tab panel's text that must follow its label."""
CALLOUT_TEXT = 2000
"""Characters of a callout's text that must be in its quote."""

# The candidates are ``.//pre | .//table | .//div[@class] | .//aside[@class] | .//details |
# .//*[@role='tabpanel']``, found by one ``iter`` over their tags (and a tab panel's own tag,
# when one is of another): libxml2 sorts a union into document order, a fifth of the reading.
_CANDIDATE_TAGS = ("pre", "table", "details", "div", "aside")
_ALWAYS = frozenset({"pre", "table", "details"})
_TAB_PANELS = etree.XPath(".//@role[.='tabpanel']/..")
# MkDocs Material's tab panels (tabs.tab_label): "tabbed-block", legacy "tabbed-content".
_TABBED = re.compile(r"\btabbed-(?:block|content)\b")
# iterwalk sends a comment or processing instruction only as an event of its own; the text
# after one (its tail, React's ``Version<!-- --> 2.0``) is the page's.
_NOT_SHOWN_EVENTS = frozenset({"comment", "pi"})
_TEXT_EVENTS = ("start", "end", *sorted(_NOT_SHOWN_EVENTS))
_CONTAINERS = frozenset({"ul", "ol", "menu", "li", "dd", "blockquote", "table", "td", "th",
                         "caption"})
_HAS_HEADING = etree.XPath("boolean(.//h1 | .//h2 | .//h3 | .//h4 | .//h5 | .//h6)")
# Where a browser starts and ends a line in code (display: block, list-item, table-row).
_LINE_TAGS = frozenset({"div", "p", "li", "tr", "table", "details", "summary", "ul", "ol", "dl",
                        "dt", "dd", "section", "article", "aside", "header", "figure",
                        "figcaption", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6",
                        "hr", "address", "main", "center"})
_ROWS = etree.XPath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr")
# What may make a <pre> more than its code's text and inline tokens: a line's element, a break,
# something not code (visible.not_code: by tag, by a class holding one of these words, by a
# user-select style). Without any, its code is its text as it stands, read in C; a false alarm
# only costs the full reading. code_text and just_text test these inline, a call per token
# being a tenth of the reading.
_MAYBE_TAGS = _LINE_TAGS | INVISIBLE | {"br"}
# The tags visible.not_code may leave out of code; ``b``: an AsciiDoc callout's number after
# its font icon. Any other element is asked only for its class and style.
_NOT_CODE_TAGS = INVISIBLE | {"b"}
_BREAKS = _LINE_TAGS | {"br"}  # where a line of code starts or ends
_STOP_TAGS = _MAYBE_TAGS | _NOT_CODE_TAGS
_MAYBE_CLASS = re.compile(r"ln|lineno|line-numbers|gutter|hideme|conum|language-id|code-title"
                          r"|error|meta-line")


@dataclass(slots=True)
class ShownTable:
    """A table's rows, split where a row holds a heading (the heading is the page's, the rows
    after it another table); per grid position: the cell's text without whitespace, whether the
    cell starts there (not the continuation of a ``colspan``), whether it shows an image.
    ``header``: the first row is all header cells."""

    rows: list[list[tuple[str, bool, bool]]]
    header: bool


@dataclass(slots=True)
class Shown:
    codes: list[str] = field(default_factory=list)
    tabs: list[tuple[str, str]] = field(default_factory=list)  # label, its panel's first text
    tables: list[ShownTable | None] = field(default_factory=list)  # None: nested too deep
    callouts: list[tuple[str, str] | None] = field(default_factory=list)  # title, text


class Reader:
    """One page's main content: ``read`` finds what it shows; ``placed`` judges where an
    element sits, remembering each ancestor it judged."""

    def __init__(self, skip: Skip | None) -> None:
        self.skip = skip
        self._hidden: dict[etree._Element, bool] = {}  # left out, with what it holds
        self._depth: dict[etree._Element, int] = {}  # containers around and including it
        self._code: set[etree._Element] = set()  # in a code block
        # A code block's reading: a tab panel, a callout or a cell reads the blocks in it for
        # its text before the page's reading meets them on their own.
        self._code_texts: dict[etree._Element, tuple[str, str] | None] = {}

    # ------------------------------------------------------------------ judging elements

    def hides(self, element: etree._Element) -> bool:
        """The element itself is left out with everything in it (not looking at ancestors)."""
        tag = element.tag
        if not isinstance(tag, str):
            return True
        tag = tag.lower()
        if tag not in HIDDEN_BARE_TAGS and not len(element.attrib):
            # No attribute for the rules below to read: only the page's own rule may skip it.
            return self.skip is not None and self.skip(element)
        names = classes(element)
        return (not_content(element, tag, names) or is_tab_strip(element, names)
                or is_theme_copy(element) or icon_title(element, names) is not None
                or (self.skip is not None and self.skip(element)))

    def placed(self, element: etree._Element, root: etree._Element) -> tuple[bool, int, bool]:
        """(shown, containers around it, inside a code block): from the nearest judged
        ancestor down, each ancestor judged once per page."""
        path = []
        node = element.getparent()
        while node is not None and node not in self._hidden:
            path.append(node)
            if node is root:
                break
            node = node.getparent()
        hidden, depth, code = (False, 0, False) if node is None or node not in self._hidden \
            else (self._hidden[node], self._depth[node], node in self._code)
        for node in path[::-1]:
            if node not in self._hidden:
                tag = node.tag.lower() if isinstance(node.tag, str) else ""
                hidden = hidden or (node is not root and self.hides(node))
                depth += tag in _CONTAINERS or (tag in ("div", "aside", "details")
                                                and is_callout(tag, classes(node)))
                code = code or is_code_block(node)
                self._hidden[node], self._depth[node] = hidden, depth
                if code:
                    self._code.add(node)
        return not hidden, depth, code

    def code(self, block: etree._Element) -> tuple[str, str] | None:
        """code_text of ``block``, read once per page."""
        if block in self._code_texts:
            return self._code_texts[block]
        code = self._code_texts[block] = code_text(block)
        return code

    # ------------------------------------------------------------------ the page

    def read(self, root: etree._Element) -> Shown:
        shown = Shown()
        self._hidden[root], self._depth[root] = False, 0
        for element in candidates(root):
            tag = element.tag.lower()
            names = classes(element)
            if tag not in ("pre", "table") and not self.structure(element, tag, names):
                continue  # a box of layout: what it shows is read with what holds it
            visible, depth, in_code = self.placed(element, root)
            if not visible or in_code or self.hides(element):
                continue
            if is_code_block(element):
                code = self.code(element)
                if code is not None:
                    shown.codes.append(code[1])
            elif tag == "table" and not is_code_table(element) and not is_layout_table(element):
                if depth >= MAX_DEPTH:
                    shown.tables.append(None)
                else:
                    shown.tables.extend(self.table(element))
            elif is_callout(tag, names):
                shown.callouts.append(None if depth >= MAX_DEPTH else self.callout(element))
            elif (label := tab_label(element)) is not None:
                text, images = self.text(element, limit=PANEL_PREFIX)
                if text or images:
                    shown.tabs.append((" ".join(label.split()), text[:PANEL_PREFIX]))
        return shown

    @staticmethod
    def structure(element: etree._Element, tag: str, names: set[str]) -> bool:
        """A Doxygen fragment, a callout or a tab panel."""
        return bool(names & CODE_DIV_CLASSES) or is_callout(tag, names) or \
            element.get("role") == "tabpanel" or bool(_TABBED.search(element.get("class") or ""))

    # ------------------------------------------------------------------ reading structures

    def text(self, top: etree._Element, leave_out: etree._Element | None = None,
             limit: int | None = None) -> tuple[str, int]:
        """The visible text of ``top`` without whitespace, and how many images it shows; a code
        block's title and code as a browser draws them. ``leave_out``: a title read on its own.
        ``limit``: characters enough, the rest is not read."""
        if not len(top) and top.tag != "img":  # a cell of text alone: nothing to walk
            text = squeeze(top.text) if top.text else ""
            return (text if limit is None else text[:limit]), 0
        parts: list[str] = []
        images = 0
        size = 0
        skipped: etree._Element | None = None
        walker = etree.iterwalk(top, events=_TEXT_EVENTS)
        for event, element in walker:
            if event in _NOT_SHOWN_EVENTS:  # a comment or processing instruction: its tail is
                size += _add(parts, element.tail)
                continue
            if event == "end":
                # A skipped element's tail was taken at its start; lxml may send its end or not.
                if element is not top and element is not skipped:
                    size += _add(parts, element.tail)
                skipped = None
                if limit is not None and size >= limit:
                    break
                continue
            skipped = None
            if element is not top:
                skip = element is leave_out or self.hides(element)
                if skip or is_code_block(element):
                    walker.skip_subtree()
                    skipped = element
                    code = None if skip else self.code(element)
                    if code is not None:
                        size += _add(parts, code[0]) + _add(parts, code[1])
                    size += _add(parts, element.tail)
                    continue
            if element.tag == "img":
                images += 1
                source = (element.get("src") or "").strip()
                if not source or source.startswith("data:"):
                    size += _add(parts, element.get("alt"))  # the converter writes it
            size += _add(parts, element.text)
        text = "".join(parts)
        return (text if limit is None else text[:limit]), images

    def table(self, table: etree._Element) -> list[ShownTable]:
        grid: Grid[_Cell] = Grid(_EMPTY_CELL)
        parts: list[ShownTable] = []
        headings = _HAS_HEADING(table)  # none in the table: none in a cell
        for row in _ROWS(table):
            cells = [cell for cell in row if isinstance(cell.tag, str) and
                     cell.tag.lower() in ("td", "th") and not self.hides(cell)]
            if headings and any(_HAS_HEADING(cell) for cell in cells):
                _table_part(grid, parts)
                grid = Grid(_EMPTY_CELL)
                continue
            for cell in cells:
                header = cell.tag.lower() == "th" or row.getparent().tag == "thead"
                text, images = self.text(cell)
                grid.add((text, header, images > 0), span(cell.get("rowspan"), rows=True),
                         span(cell.get("colspan")))
            grid.end_row()
        _table_part(grid, parts)
        return parts

    def callout(self, box: etree._Element) -> tuple[str, str]:
        title_element, title = None, ""
        for element in box.iter():
            if element is box or not isinstance(element.tag, str):
                continue
            names = classes(element)
            icon = icon_title(element, names)
            if icon is not None:
                title_element, title = element, icon
                break
            if is_callout_title(names) or (element.tag == "summary"
                                           and element.getparent() is box):
                title_element, title = element, label_text(element)
                break
            if is_callout(element.tag, names):
                break  # a callout inside before any title: this one has none
        text, _ = self.text(box, leave_out=title_element, limit=CALLOUT_TEXT)
        return title, text[:CALLOUT_TEXT]


def candidates(root: etree._Element) -> list[etree._Element]:
    """What may be a structure the page shows, in document order (see _CANDIDATE_TAGS)."""
    tags = _CANDIDATE_TAGS
    others = {panel.tag for panel in _TAB_PANELS(root)}.difference(tags)
    if others:
        tags += tuple(sorted(others))
    return [element for element in root.iterdescendants(tags)
            if element.tag in _ALWAYS or element.get("role") == "tabpanel"
            or (element.tag in ("div", "aside") and element.get("class") is not None)]


def _add(parts: list[str], text: str | None) -> int:
    if not text:
        return 0
    text = squeeze(text)
    if text:
        parts.append(text)
    return len(text)


_Cell = tuple[str, bool, bool]  # text, header?, images?
_EMPTY_CELL: _Cell = ("", False, False)


def _table_part(grid: Grid[_Cell], parts: list[ShownTable]) -> None:
    rows = [row for row in grid.rows if row]
    if not rows:
        return
    header = all(is_header for (_, is_header, _), _ in rows[0])
    parts.append(ShownTable([[(text, starts_cell(row, column), images)
                              for column, ((text, _, images), _) in enumerate(row)]
                             for row in rows], header))


def is_code_block(element: etree._Element) -> bool:
    tag = element.tag
    return tag == "pre" or (tag == "div" and bool(classes(element) & CODE_DIV_CLASSES))


def code_text(block: etree._Element) -> tuple[str, str] | None:
    """A code block's title (a label drawn in it) and its code as a browser lays it out; None
    for the line-number column of a code table (a ``<pre>`` of line numbers only)."""
    fragment = block.tag != "pre"
    if not fragment and just_text(block):
        code = "".join(block.itertext())
        # The HTML parser's rule: a newline right after <pre> is not text.
        return "", (code[1:] if (block.text or "").startswith("\n") else code).removesuffix("\n")
    out: list[str] = []
    title = ""
    numbers = False
    text = block.text or ""
    if not fragment and text.startswith("\n"):
        text = text[1:]
    # Every text is taken when it is not empty; a fragment's whitespace between lines is not.
    add = functools.partial(_fragment_add, out) if fragment else out.append
    if text:
        add(text)
    # The open elements: their children still to read, the element, where its div.line began
    # in ``out`` (-1: not one). Most elements are tokens without children: each is read whole
    # where it is met, with no "end" event to wait for.
    stack: list[tuple[Iterator[etree._Element], etree._Element, int]] = [(iter(block), block, -1)]
    while stack:
        children, parent, began = stack[-1]
        for element in children:
            tag = element.tag
            if not isinstance(tag, str):
                # A comment or processing instruction is not shown; the text after it is.
                if tail := element.tail:
                    add(tail)
                continue
            value = element.get("class")
            if tag in _NOT_CODE_TAGS or (value is not None and _maybe_class(value)) or (
                    (style := element.get("style")) is not None and "user-select" in style):
                names = set(value.split()) if value else set()
                if not_code(element, names, block):
                    if TITLE_LABEL in names and not title:
                        title = label_text(element)
                    if names & LINE_NUMBER_CLASSES or unselectable(element):
                        numbers = True
                    if is_code_callout(element, names) and out:
                        out[-1] = out[-1].rstrip(" \t")  # the space before a callout is not code
                    if tail := element.tail:
                        add(tail)
                    continue
            if tag in _BREAKS:
                line = -1
                if tag == "br":
                    out.append("\n")
                else:
                    _line_break(out)
                    if tag == "div" and value and CODE_LINE_CLASS in value.split():
                        line = len(out)
                if text := element.text:
                    add(text)
                if len(element):
                    stack.append((iter(element), element, line))
                    break
                if tag != "br":
                    _line_end(out, line)
            else:  # a token
                if text := element.text:
                    add(text)
                if len(element):
                    stack.append((iter(element), element, -1))
                    break
            if tail := element.tail:
                add(tail)
        else:
            stack.pop()
            if parent is not block:
                if parent.tag in _LINE_TAGS:
                    _line_end(out, began)
                if tail := parent.tail:
                    add(tail)
    code = "".join(out).removesuffix("\n")
    if numbers and not code.strip():
        return None
    return title, code


def just_text(block: etree._Element) -> bool:
    """Whether ``block``'s code is its text as it stands (see _MAYBE_TAGS)."""
    for element in block.iterdescendants():
        tag = element.tag
        if not isinstance(tag, str) or tag in _STOP_TAGS:
            return False
        value = element.get("class")
        if value is not None and _maybe_class(value):
            return False
        style = element.get("style")
        if style is not None and "user-select" in style:
            return False
    return True


@functools.lru_cache(maxsize=4096)
def _maybe_class(value: str) -> bool:
    """A class attribute that may say "not code": a highlighter has a few dozen, each asked
    for every token of every block."""
    return _MAYBE_CLASS.search(value) is not None


def _fragment_add(out: list[str], text: str) -> None:
    if "\n" in text and not text.strip():
        return  # between a Doxygen fragment's line divs: not laid out
    out.append(text)


def _line_end(out: list[str], began: int) -> None:
    if began == len(out):
        out.append("\n")  # an empty div.line: CSS gives it a line's height
    else:
        _line_break(out)


def _line_break(out: list[str]) -> None:
    if out and not out[-1].endswith("\n"):
        out.append("\n")


def read_shown(root: etree._Element, skip: Skip | None = None) -> Shown:
    return Reader(skip).read(root)


