"""HTML to GitHub-flavoured Markdown, and the visible text, in one iterative pass over lxml.

Why our own walker (benchmarks/markdown.py has the measurement): code blocks must come out
byte-exact with their language, tables whose cells hold code must not be flattened, and a page
nested 1,500 ``<div>`` deep must not raise ``RecursionError``. The walk is ``etree.iterwalk``
(C, no Python recursion) driving an explicit stack of frames; each block container (list item,
quote, table cell…) collects its own blocks and is indented or prefixed into its parent when it
ends.

``text`` comes from the same walk and keeps the meaning it always had: every text and tail of a
kept element, joined by spaces, whitespace runs collapsed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import urljoin

from lxml import etree

from scraper.docpages.fidelity import Fidelity, measure
from scraper.docpages.tabs import is_tab_strip, is_theme_copy, tab_label

# Never content: what these hold is not text a reader sees.
INVISIBLE = frozenset({"script", "style", "noscript", "template", "nav", "footer", "svg", "form",
                       "button", "input", "select", "textarea", "iframe", "object", "canvas",
                       "head", "title", "meta", "link"})
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# ``headings`` has always been h1–h4: deeper levels are too fine-grained to describe a page.
LISTED_HEADING_LEVEL = 4
BLOCKS = frozenset({"p", "div", "section", "article", "main", "aside", "figure", "figcaption",
                    "address", "center", "details", "fieldset", "hgroup", "header", "body",
                    "html", "dl"})
EMPHASIS = {"em": "*", "i": "*", "cite": "*", "var": "*", "dfn": "*",
            "strong": "**", "b": "**", "del": "~~", "s": "~~", "strike": "~~"}
INLINE_CODE = frozenset({"code", "kbd", "samp", "tt"})
INLINE_IN_HEADING = INLINE_CODE | EMPHASIS.keys() | {"a", "img"}
CELLS = frozenset({"td", "th"})
# Where a paragraph ends, also for a container rendered flat beyond MAX_NESTING.
BLOCK_ENDS = BLOCKS | CELLS | {"tr", "tbody", "thead", "tfoot", "li", "dd", "dt", "ul", "ol",
                              "menu", "blockquote", "table", "caption", "summary"}
# Markdown readers stop nesting long before this; deeper containers render flat, so a page
# nested 100,000 lists deep costs linear, not quadratic, indentation.
MAX_NESTING = 24
MAX_FRAMES = 3 * MAX_NESTING
ADMONITION_CLASSES = frozenset({"admonition", "theme-admonition", "custom-block", "alert"})
ADMONITION_TITLES = frozenset({"admonition-title", "custom-block-title"})
# Generators' line numbers inside or beside a code block: not part of the code (Pygments,
# Prism, Doxygen, Rouge's gutter, Chroma's ``lnt``/``ln``).
LINE_NUMBER_CLASSES = frozenset({"linenos", "lineno", "linenodiv", "line-numbers-rows", "gutter",
                                 "lnt", "ln", "hljs-ln-numbers"})
# Tables that lay out a code block beside its line numbers: the code, not a table.
CODE_TABLE_CLASSES = frozenset({"highlighttable", "rouge-table", "lntable", "hljs-ln"})
# Code blocks that are not a ``<pre>``: Doxygen's fragments, one ``div.line`` per line.
CODE_DIV_CLASSES = frozenset({"fragment"})
# Block tags, where a browser starts and ends a line in a code block.
CODE_LINE_BLOCKS = BLOCK_ENDS | {"p", "pre"}
# A heading's permalink: a link to the heading whose whole text is one of these symbols.
PERMALINK_SYMBOLS = frozenset({"§", "¶", "#", "◆", "🔗", "⚓", "🔗︎"})

_LANGUAGE = re.compile(r"(?:^|\s)(language|lang|highlight|sourceCode)-([\w+#.-]+)")
# Sphinx's "default" highlighting (``highlight-default``) is its lenient Python 3 lexer;
# kramdown's ``language-default`` is a block without a language.
_LANGUAGE_ALIASES = {"default": "python", "python3": "python", "none": "", "plaintext": "text"}
# A bare class on a ``<pre>``'s ``<code>`` that names a language (TypeDoc's ``class="ts"``).
_BARE_LANGUAGE = re.compile(r"^[a-z][a-z0-9+#-]{0,15}$")
_NOT_LANGUAGES = frozenset({"hljs", "highlight", "code", "source", "chroma", "notranslate",
                            "block", "line", "lines", "nohighlight", "prettyprint", "nextra-code"})
_WHITESPACE = re.compile(r"\s+")
_HARD_BREAK = "\x00"
_BLOCK_START = re.compile(r"^(#{1,6}\s|>|[-+*]\s|\d{1,9}[.)]\s|={3,}|-{3,}|`{3,}|~{3,})")
_INLINE_ESCAPE = re.compile(r"([*`\\]|<(?=[A-Za-z/!?]))")
_BACKTICKS = re.compile(r"`+")
_HEADING_BLOCK = re.compile(r"^#{1,6} ")
_LIST_ITEM = re.compile(r"^(?:[-*+]|\d{1,9}[.)])(?: |$)")
_TABLE_ROWS = etree.XPath("./tr | ./tbody/tr")

Skip = Callable[[etree._Element], bool]


@dataclass(frozen=True, slots=True)
class Converted:
    markdown: str
    text: str
    headings: list[str]
    fidelity: Fidelity


def classes(element: etree._Element) -> set[str]:
    value = element.get("class")
    return set(value.split()) if value else set()


def code_language(pre: etree._Element) -> str:
    """The language a generator marked a code block with: on the ``<pre>``, its ``<code>`` or a
    wrapping element (Sphinx ``div.highlight-python``, VitePress ``div.language-sh``), nearest
    first."""
    candidates = [pre, *pre.iterchildren("code")]
    parent = pre.getparent()
    # Up to the wrapper of a Pygments line-number table: div > table > tbody > tr > td > div.
    for _ in range(6):
        if parent is None:
            break
        candidates.append(parent)
        parent = parent.getparent()
    language = language_of(element.get("class") or "" for element in candidates)
    marked = (pre.get("data-language") or "").strip().lower()  # Expressive Code, rehype-pretty-code
    if not language and _BARE_LANGUAGE.match(marked) and marked not in _NOT_LANGUAGES:
        return _LANGUAGE_ALIASES.get(marked, marked)
    if not language:
        for code in pre.iterchildren("code"):
            names = (code.get("class") or "").split()
            if len(names) == 1 and _BARE_LANGUAGE.match(names[0]) and \
                    names[0] not in _NOT_LANGUAGES and not _LANGUAGE.search(names[0]):
                return _LANGUAGE_ALIASES.get(names[0], names[0])
    return language


def language_of(class_attributes: Iterable[str]) -> str:
    """The first language named by ``class`` attributes, nearest element first."""
    for value in class_attributes:
        match = _LANGUAGE.search(value)
        if match:
            name = match.group(2).lower()
            if name == "default" and match.group(1) != "highlight":
                return ""
            return _LANGUAGE_ALIASES.get(name, name)
    return ""


def fence(code: str, language: str) -> str:
    code = code.removesuffix("\n")
    longest = max((len(run) for run in _BACKTICKS.findall(code)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}{language}\n{code}\n{marks}"


def inline_code(raw: str) -> str:
    code = _WHITESPACE.sub(" ", raw)
    if not code.strip():
        return code
    longest = max((len(run) for run in _BACKTICKS.findall(code)), default=0)
    marks = "`" * (longest + 1)
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{marks}{pad}{code}{pad}{marks}"


def escape(text: str) -> str:
    if "*" in text or "`" in text or "\\" in text or "<" in text:
        return _INLINE_ESCAPE.sub(r"\\\1", text)
    return text


def collapse(inline: list[str]) -> str:
    # str.split() and re's \s agree on what whitespace is (str.isspace); split is faster.
    return " ".join("".join(inline).split())


def indent(block: str, first: str, rest: str) -> str:
    lines = block.split("\n")
    return "\n".join([first + lines[0], *(rest + line if line else "" for line in lines[1:])])


@dataclass(slots=True)
class Frame:
    """What one element collects until it ends: finished blocks, and the inline run after them."""

    kind: str
    element: etree._Element | None
    blocks: list[str] = field(default_factory=list)
    inline: list[str] = field(default_factory=list)
    # list: ordered?, next number; table: rows of cells; cell: header?
    ordered: bool = False
    number: int = 1
    rows: list[list[tuple[bool, list[str]]]] = field(default_factory=list)
    header: bool = False
    numbers: bool = False  # code: line numbers were left out of it
    omitted: bool = False  # code: an element in it was left out (numbers, callouts, buttons)
    fragment: bool = False  # code outside <pre>: whitespace between its line divs is not code
    label: str = ""  # tab panel: its tab's label

    @property
    def node(self) -> etree._Element:
        """The element this frame collects for: every frame has one but the root's."""
        assert self.element is not None
        return self.element

    def flush(self) -> None:
        if not self.inline:
            return
        paragraph = collapse(self.inline)
        self.inline.clear()
        if paragraph:
            paragraph = paragraph.replace(f" {_HARD_BREAK}", _HARD_BREAK)
            paragraph = paragraph.replace(f"{_HARD_BREAK} ", _HARD_BREAK).strip(_HARD_BREAK)
            if _BLOCK_START.match(paragraph):
                paragraph = "\\" + paragraph
            self.blocks.append(paragraph.replace(_HARD_BREAK, "\\\n"))

    def take(self) -> str:
        self.flush()
        return "\n\n".join(block for block in self.blocks if block)


class Walker:
    """One page: ``run`` walks the tree once and returns its Markdown, text and headings."""

    def __init__(self, base_url: str, skip: Skip | None) -> None:
        self.base_url = base_url
        self.skip = skip
        self.stack: list[Frame] = [Frame("root", None)]
        self.text: list[str] = []
        self.headings: list[str] = []
        self.containers = 0  # frames that indent or prefix: bounded by MAX_NESTING
        self.in_heading = False  # headings hold inline markup only
        self.heading_text: list[str] = []  # the open heading's visible text, for ``headings``
        self.in_link = False  # a link inside a link is its text
        self.code_blocks: list[str] = []  # each code block's code, for the fidelity check

    @property
    def top(self) -> Frame:
        return self.stack[-1]

    # ----------------------------------------------------------------------- the walk

    def run(self, root: etree._Element) -> Converted:
        walker = etree.iterwalk(root, events=("start", "end"))
        skipped: etree._Element | None = None
        for event, element in walker:
            if skipped is not None:
                # A skipped element's tail is visible text. lxml may or may not send the "end"
                # of a skipped subtree; either way its tail comes before whatever comes next.
                self.add_text(skipped.tail)
                if event == "end" and element is skipped:
                    skipped = None
                    continue
                skipped = None
            if event == "start":
                if self.hidden(element):
                    walker.skip_subtree()
                    skipped = element
                    continue
                self.start(element)
                if element.text:
                    self.add_text(element.text)
            else:
                self.end(element)
                if element is not root:
                    self.add_text(element.tail)
        markdown = self.stack[0].take()
        return Converted(markdown, collapse([" ".join(self.text)]), self.headings,
                         measure(markdown, self.code_blocks))

    def hidden(self, element: etree._Element) -> bool:
        tag = element.tag
        if not isinstance(tag, str):  # comments, processing instructions
            return True
        tag = tag.lower()
        if tag in INVISIBLE:
            if self.top.kind == "pre":
                self.top.omitted = True
            return True
        if tag == "header" and element.find(".//h1") is None:
            return True  # a page header; an article's own header holds its title
        names = classes(element)
        if names & LINE_NUMBER_CLASSES or (self.top.kind == "pre" and unselectable(element)):
            if self.top.kind == "pre":
                self.top.numbers = self.top.omitted = True
            return True
        if "hideme" in names:
            self.top.omitted = True
            return True  # rustdoc's toggle labels: "Expand description", "Show 19 fields"
        if self.top.kind == "pre":
            if is_callout(element, names):
                self.top.omitted = True
                # The space that set the callout off from the code is not code either.
                self.top.inline.append(self.top.inline.pop().rstrip(" \t")
                                       if self.top.inline else "")
                return True
            return False  # code is kept whole, even a token whose class looks like furniture
        if is_tab_strip(element, names) or is_theme_copy(element):
            return True  # each panel is written under its own label; a theme's copy once
        return self.skip is not None and self.skip(element)

    def add_text(self, text: str | None) -> None:
        if not text:
            return
        self.text.append(text)
        if self.in_heading:
            self.heading_text.append(text)
        top = self.top
        if top.kind in ("pre", "code"):
            if top.fragment and "\n" in text and not text.strip():
                return  # between a Doxygen fragment's line divs: not laid out
            top.inline.append(text)
        elif top.kind in ("list", "table") and not text.strip():
            return  # whitespace between items and rows
        else:
            top.inline.append(escape(text))

    # ----------------------------------------------------------------------- start tags

    def push(self, kind: str, element: etree._Element, **extra: object) -> Frame:
        frame = Frame(kind, element, **extra)  # type: ignore[arg-type]
        self.stack.append(frame)
        return frame

    def start(self, element: etree._Element) -> None:
        tag = element.tag.lower()
        top = self.top
        if top.kind == "pre":
            if tag == "br":
                top.inline.append("\n")
            elif tag in CODE_LINE_BLOCKS:
                self.line_break(top)
            return
        if top.kind == "code" or (self.in_heading and tag not in INLINE_IN_HEADING):
            if tag == "pre":
                self.code_blocks.append("\x00")  # its code became inline text: not a block
            if tag == "br" or tag in BLOCK_ENDS or "where" in classes(element):
                top.inline.append(" ")  # rustdoc's ``where`` clauses sit on lines of their own
            return
        if tag == "pre" or (tag == "div" and classes(element) & CODE_DIV_CLASSES):
            top.flush()
            self.push("pre", element, fragment=tag != "pre")
        elif tag in HEADINGS:
            top.flush()
            self.in_heading = True
            self.push("heading", element)
        elif len(self.stack) >= MAX_FRAMES and (tag in INLINE_CODE or tag in EMPHASIS
                                                 or tag == "a"):
            return  # markup nested this deep is noise: its text flows on unformatted
        elif tag in INLINE_CODE:
            if len(element) and element.find(".//pre") is not None:
                # Rouge's line-number table inside <code> (Jekyll's {% highlight linenos %}):
                # a wrapper of the code block, not inline code.
                top.flush()
            else:
                self.push("code", element)
        elif tag == "a" and not self.in_link:
            self.in_link = True
            # number: where the link's text starts in the open heading's, to take a permalink out
            self.push("link", element, number=len(self.heading_text))
        elif tag in EMPHASIS:
            self.push("emphasis", element)
        elif tag == "img":
            self.image(element)
        elif tag == "br":
            top.inline.append(_HARD_BREAK)
        elif tag == "label":
            top.inline.append(" ")  # tab and form labels sit side by side without spaces
        elif tag == "hr":
            top.flush()
            top.blocks.append("---")
        elif (label := tab_label(element)) is not None:
            top.flush()
            if label:
                self.text.append(label)
            self.push("tab", element, label=label)
        elif self.containers >= MAX_NESTING:
            top.flush()
        elif tag in ("ul", "ol", "menu"):
            top.flush()
            self.containers += 1
            start = element.get("start", "1").strip()
            self.push("list", element, ordered=tag == "ol",
                      number=int(start) if start.isdigit() else 1)
        elif tag in ("li", "dd"):
            top.flush()
            self.containers += 1
            self.push(tag, element)
        elif tag == "blockquote" or (tag in ("div", "aside", "details")
                                     and classes(element) & ADMONITION_CLASSES):
            top.flush()
            self.containers += 1
            self.push("quote", element)
        elif tag == "table" and not classes(element) & CODE_TABLE_CLASSES and \
                not is_numbered_code(element):
            top.flush()
            self.containers += 1
            self.push("table", element)
        elif tag == "tr" and top.kind == "table":
            top.rows.append([])
        elif tag in CELLS and top.kind == "table":
            self.containers += 1
            if not top.rows:
                top.rows.append([])
            self.push("cell", element, header=tag == "th" or self.in_thead(element))
        elif tag == "caption" and top.kind == "table":
            self.containers += 1
            self.push("caption", element)
        elif tag in ("dt", "summary") or classes(element) & ADMONITION_TITLES or any(
                name.startswith("admonitionHeading") for name in classes(element)):
            top.flush()
            self.push("title", element)
        elif tag in BLOCKS or tag in ("tr", "td", "th", "tbody", "thead", "tfoot"):
            top.flush()

    @staticmethod
    def in_thead(cell: etree._Element) -> bool:
        row = cell.getparent()
        section = row.getparent() if row is not None else None
        return section is not None and section.tag == "thead"

    def image(self, element: etree._Element) -> None:
        alt = _WHITESPACE.sub(" ", element.get("alt") or "").strip()
        src = (element.get("src") or "").strip()
        if src and not src.startswith("data:"):
            alt = alt.replace("]", "\\]")
            self.top.inline.append(f"![{alt}]({self.url(src)})")
        elif alt:
            self.top.inline.append(escape(alt))

    def url(self, href: str) -> str:
        url = urljoin(self.base_url, href.strip())
        return f"<{url}>" if any(c in url for c in " ()<>") else url

    # ----------------------------------------------------------------------- end tags

    @staticmethod
    def line_break(frame: Frame) -> None:
        """A block element in code starts and ends a line, as a browser lays it out (Expressive
        Code and Doxygen put each line in a ``<div>`` with no newline between them)."""
        if frame.inline and not frame.inline[-1].endswith("\n"):
            frame.inline.append("\n")

    def end(self, element: etree._Element) -> None:
        top = self.top
        if top.element is not element:
            if element.tag in BLOCK_ENDS:
                if top.kind == "pre":
                    self.line_break(top)
                elif top.kind == "heading" or top.kind == "code":
                    top.inline.append(" ")  # a heading's text stays in the heading
                else:
                    top.flush()
            return
        frame = self.stack.pop()
        parent = self.top
        finish = getattr(self, f"end_{frame.kind}")
        finish(frame, parent)

    def end_pre(self, frame: Frame, parent: Frame) -> None:
        code = "".join(frame.inline)
        if frame.node.tag == "pre" and (frame.node.text or "").startswith("\n"):
            code = code[1:]  # HTML drops a newline right after <pre>; one inside <code> stays
        if frame.numbers and not code.strip():
            return  # the line-number column of a code table
        code = code.removesuffix("\n")
        # The check against the tree: the code holds every character the block's elements do
        # (less line numbers, callouts, buttons), whitespace aside; a block that lost text
        # counts as not exact, whatever its Markdown holds.
        in_tree = tree_code(frame.element) if frame.omitted else \
            "".join("".join(frame.node.itertext()).split())
        self.code_blocks.append(code if "".join(code.split()) == in_tree else "\x00")
        parent.blocks.append(fence(code, code_language(frame.element)))

    def end_heading(self, frame: Frame, parent: Frame) -> None:
        self.in_heading = False
        text = collapse(frame.inline).replace(_HARD_BREAK, " ")
        if text:
            level = HEADINGS[frame.node.tag.lower()]
            parent.blocks.append(f"{'#' * level} {text}")
            if level <= LISTED_HEADING_LEVEL:
                self.headings.append(collapse(self.heading_text))
        self.heading_text.clear()

    def end_code(self, frame: Frame, parent: Frame) -> None:
        parent.inline.append(inline_code("".join(frame.inline)))

    def end_link(self, frame: Frame, parent: Frame) -> None:
        self.in_link = False
        if frame.blocks:  # a link around blocks (cards): keep the blocks, drop the target
            self.merge(frame, parent)
            return
        label = collapse(frame.inline).replace(_HARD_BREAK, " ")
        href = (frame.node.get("href") or "").strip()
        if not label:
            return
        if label in PERMALINK_SYMBOLS and href.startswith("#"):
            del self.heading_text[frame.number:]
            if self.text and self.text[-1].strip() == label:
                self.text.pop()
            return
        if not href or href.lower().startswith(("javascript:", "data:")):
            parent.inline.append(label)
        else:
            label = label.replace("[", "\\[").replace("]", "\\]")
            parent.inline.append(f"[{label}]({self.url(href)})")

    def end_emphasis(self, frame: Frame, parent: Frame) -> None:
        if frame.blocks:
            self.merge(frame, parent)
            return
        raw = "".join(frame.inline)
        inner = raw.strip()
        if not inner:
            parent.inline.append(raw)
            return
        mark = EMPHASIS[frame.node.tag.lower()]
        lead = " " if raw[:1].isspace() else ""
        trail = " " if raw[-1:].isspace() else ""
        parent.inline.append(f"{lead}{mark}{inner}{mark}{trail}")

    def end_title(self, frame: Frame, parent: Frame) -> None:
        title = frame.take()
        if title:
            parent.flush()
            parent.blocks.append(f"**{title}**" if "\n" not in title else title)

    def end_tab(self, frame: Frame, parent: Frame) -> None:
        """A tab's panel under its label, as a bold line of its own: a heading would put every
        tab of a code sample into the page's outline, as a section it does not have."""
        body = frame.take()
        if body:
            parent.flush()
            if frame.label:
                parent.blocks.append(f"**{escape(frame.label)}**")
            parent.blocks.append(body)

    def merge(self, frame: Frame, parent: Frame) -> None:
        parent.flush()
        body = frame.take()
        if body:
            parent.blocks.append(body)

    def end_list(self, frame: Frame, parent: Frame) -> None:
        self.containers -= 1
        frame.flush()  # stray text directly in the list becomes an item of its own
        items = frame.blocks
        if items:
            loose = any("\n\n" in item for item in items)
            parent.flush()
            parent.blocks.append(("\n\n" if loose else "\n").join(items))

    def list_marker(self) -> tuple[Frame | None, str]:
        owner = self.top if self.top.kind == "list" else None
        if owner is None or not owner.ordered:
            return owner, "- "
        marker = f"{owner.number}. "
        owner.number += 1
        return owner, marker

    def end_li(self, frame: Frame, parent: Frame) -> None:
        self.containers -= 1
        frame.flush()
        # A sublist right after the item's text belongs to it without a blank line: the
        # list stays tight, as the page shows it.
        body = ""
        for block in frame.blocks:
            joint = "\n" if _LIST_ITEM.match(block) else "\n\n"
            body = f"{body}{joint}{block}" if body else block
        _, marker = self.list_marker()
        item = indent(body, marker, " " * len(marker)) if body else marker.rstrip()
        if parent.kind == "list":
            parent.blocks.append(item)
        else:
            parent.flush()
            parent.blocks.append(item)

    def end_dd(self, frame: Frame, parent: Frame) -> None:
        self.containers -= 1
        body = frame.take()
        if body:
            parent.flush()
            parent.blocks.append(indent(body, ": ", "  "))

    def end_quote(self, frame: Frame, parent: Frame) -> None:
        self.containers -= 1
        body = frame.take()
        if body:
            parent.flush()
            parent.blocks.append(indent(body, "> ", "> ").replace("\n> \n", "\n>\n")
                                 .replace("\n\n", "\n>\n"))

    def end_caption(self, frame: Frame, parent: Frame) -> None:
        self.containers -= 1
        caption = frame.take()
        if caption:
            parent.blocks.append(f"*{caption}*" if "\n" not in caption else caption)

    def end_cell(self, frame: Frame, parent: Frame) -> None:
        self.containers -= 1
        blocks = [block for block in (*frame.blocks, collapse(frame.inline)) if block]
        frame.inline.clear()
        colspan = frame.node.get("colspan", "1").strip()
        span = min(int(colspan), 100) if colspan.isdigit() and int(colspan) > 0 else 1
        row = parent.rows[-1]
        row.append((frame.header, blocks))
        row.extend((frame.header, []) for _ in range(span - 1))

    def end_table(self, frame: Frame, parent: Frame) -> None:
        self.containers -= 1
        frame.flush()
        rows = [row for row in frame.rows if row]
        parent.flush()
        parent.blocks.extend(frame.blocks)  # caption and any stray text, before the table
        # A row holding a heading (Doxygen's member tables: "Public Types", then its members)
        # ends the table before it: the heading is the page's, and the rows after it a table
        # of their own.
        part: list[list[tuple[bool, list[str]]]] = []
        for row in rows:
            blocks = [block for _, cell in row for block in cell]
            if any(_HEADING_BLOCK.match(block) for block in blocks):
                self.add_table(part, parent)
                parent.blocks.extend(blocks)
                part = []
            else:
                part.append(row)
        self.add_table(part, parent)

    @staticmethod
    def add_table(rows: list[list[tuple[bool, list[str]]]], parent: Frame) -> None:
        if not rows:
            return
        simple = all(len(blocks) <= 1 and "\n" not in "".join(blocks)
                     for row in rows for _, blocks in row)
        parent.blocks.append(pipe_table(rows) if simple else table_as_list(rows))


def tree_code(block: etree._Element) -> str:
    """The text in a code block's elements, read straight from the tree, less what is drawn
    in it but is not code, and without whitespace (the walk knows where a browser puts it)."""
    parts: list[str] = []
    skipped: etree._Element | None = None
    walker = etree.iterwalk(block, events=("start", "end"))
    for event, element in walker:
        if event == "end":
            # A skipped element's tail is taken at its start; lxml may send its end or not.
            if element is not block and element is not skipped:
                parts.append(element.tail or "")
            continue
        skipped = None
        names = classes(element) if isinstance(element.tag, str) else set()
        if not isinstance(element.tag, str) or element.tag in INVISIBLE or \
                names & LINE_NUMBER_CLASSES or "hideme" in names or is_callout(element, names) \
                or unselectable(element):
            walker.skip_subtree()
            skipped = element
            parts.append(element.tail or "")
            continue
        parts.append(element.text or "")
    return "".join("".join(parts).split())


def unselectable(element: etree._Element) -> bool:
    """Drawn in code but left out when it is copied: Chroma's line numbers with inline styles
    (Hugo's default ``noClasses``) carry no class, only ``user-select:none``."""
    style = element.get("style")
    return style is not None and "user-select" in style and \
        "user-select:none" in style.replace(" ", "")


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


def is_callout(element: etree._Element, names: set[str]) -> bool:
    """An AsciiDoc callout in code: ``<b class=conum>(1)</b>``, or the ``<i class=conum>`` of
    font icons with the ``<b>(1)</b>`` right after it."""
    if "conum" in names:
        return True
    if element.tag != "b":
        return False
    previous = element.getprevious()
    return previous is not None and "conum" in classes(previous) and not previous.tail


def cell_text(blocks: list[str]) -> str:
    return "".join(blocks).replace("|", "\\|").replace("\\\n", "<br>").replace(_HARD_BREAK, "<br>")


def pipe_table(rows: list[list[tuple[bool, list[str]]]]) -> str:
    """A GFM pipe table; a table without a header row (docutils) gets an empty one, since GFM
    needs one and promoting the first data row would misstate it."""
    width = max(len(row) for row in rows)
    if not all(is_header for is_header, _ in rows[0]):
        rows = [[(True, [])] * width, *rows]
    lines = []
    for number, row in enumerate(rows):
        cells = [cell_text(blocks) for _, blocks in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if number == 0:
            lines.append("|" + " --- |" * width)
    return "\n".join(lines)


def table_as_list(rows: list[list[tuple[bool, list[str]]]]) -> str:
    """A table whose cells hold blocks (code, lists, paragraphs): one list item per row, each
    cell under its column's header, so no code block is squeezed into a pipe-table row."""
    header: list[str] = []
    if all(is_header for is_header, _ in rows[0]) and len(rows) > 1:
        header = ["".join(blocks) for _, blocks in rows[0]]
        rows = rows[1:]
    items = []
    for row in rows:
        parts: list[str] = []
        for column, (_, blocks) in enumerate(row):
            if not blocks:
                continue
            name = header[column] if column < len(header) else ""
            if name and "\n" not in blocks[0] and not blocks[0].startswith(("```", "|", "- ")):
                parts.append(f"**{name}**: {blocks[0]}")
                parts.extend(blocks[1:])
            else:
                parts.extend([f"**{name}**:"] if name else [])
                parts.extend(blocks)
        if parts:
            items.append(indent("\n\n".join(parts), "- ", "  "))
    return "\n\n".join(items)


def convert(root: etree._Element, base_url: str, skip: Skip | None = None) -> Converted:
    """Markdown, visible text and h1–h4 headings of ``root``; ``skip(element)`` drops an element
    with everything in it (navigation, buttons) but not the text that follows it."""
    return Walker(base_url, skip).run(root)
