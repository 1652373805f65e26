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
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from urllib.parse import urljoin

from lxml import etree

from scraper.docpages.callouts import icon_title, is_callout, is_callout_title, is_layout_table
from scraper.docpages.tables import HARD_BREAK, Cell, Grid, GridRow, add_table, indent, span
from scraper.docpages.tabs import is_tab_strip, is_theme_copy, tab_label
from scraper.docpages.visible import (
    CODE_DIV_CLASSES,
    CODE_LABEL_CLASSES,
    CODE_LINE_CLASS,
    HIDDEN_BARE_TAGS,
    HIDDEN_LABEL,
    INVISIBLE,
    LANGUAGE_LABEL,
    LINE_NUMBER_CLASSES,
    TITLE_LABEL,
    TWOSLASH_ANNOTATIONS,
    classes,
    is_code_callout,
    is_code_table,
    label_text,
    not_content,
    unselectable,
)

HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# ``headings`` has always been h1–h4: deeper levels are too fine-grained to describe a page.
LISTED_HEADING_LEVEL = 4
BLOCKS = frozenset({"p", "div", "section", "article", "main", "aside", "figure", "figcaption",
                    "address", "center", "details", "fieldset", "hgroup", "header", "body",
                    "html", "dl"})
EMPHASIS = {"em": "*", "i": "*", "cite": "*", "var": "*", "dfn": "*",
            "strong": "**", "b": "**", "del": "~~", "s": "~~", "strike": "~~"}
INLINE_CODE = frozenset({"code", "kbd", "samp", "tt"})
INLINE_IN_HEADING = INLINE_CODE | frozenset(EMPHASIS) | {"a", "img"}
CELLS = frozenset({"td", "th"})
# Where a paragraph ends, also for a container rendered flat beyond MAX_NESTING.
BLOCK_ENDS = BLOCKS | CELLS | {"tr", "tbody", "thead", "tfoot", "li", "dd", "dt", "ul", "ol",
                              "menu", "blockquote", "table", "caption", "summary"}
# Markdown readers stop nesting long before this; deeper containers render flat, so a page
# nested 100,000 lists deep costs linear, not quadratic, indentation.
MAX_NESTING = 24
MAX_FRAMES = 3 * MAX_NESTING
CODE_LINE_BLOCKS = BLOCK_ENDS | {"p", "pre"}
# A heading's permalink: a link to the heading whose whole text is one of these symbols.
PERMALINK_SYMBOLS = frozenset({"§", "¶", "#", "◆", "🔗", "⚓", "🔗︎"})

_LANGUAGE = re.compile(r"(?:^|\s)(language|lang|highlight|sourceCode)-([\w+#.-]+)")
# Sphinx's "default" highlighting (``highlight-default``) is its lenient Python 3 lexer;
# kramdown's ``language-default`` is a block without a language.
_LANGUAGE_ALIASES = {"default": "python", "python3": "python", "none": "", "plaintext": "text"}
# A bare class on a ``<pre>``'s ``<code>`` that names a language (TypeDoc's ``class="ts"``).
_BARE_LANGUAGE = re.compile(r"^[a-z][a-z0-9+#-]{0,15}$")
# A language label's text that can stand as a fence's info string: one word, no backtick.
_INFO_WORD = re.compile(r"^[\w+#.-]{1,32}$")
_NOT_LANGUAGES = frozenset({"hljs", "highlight", "code", "source", "chroma", "notranslate",
                            "block", "line", "lines", "nohighlight", "prettyprint", "nextra-code"})
_WHITESPACE = re.compile(r"\s+")
_HARD_BREAK = HARD_BREAK
# What starts a block at the start of a line: a heading, quote, list item, rule, fence, or a
# link reference definition (``[label]: url``, which would swallow the line).
_BLOCK_START = re.compile(r"^(#{1,6}\s|>|[-+*]\s|\d{1,9}[.)]\s|={3,}|-{3,}|`{3,}|~{3,}"
                          r"|\[[^\]]*\]:)")
# What CommonMark reads as markup in text: a backslash escape, emphasis (``*``; ``_`` unless
# between two letters or digits, where it can neither open nor close one), a code span, raw
# HTML or an autolink (``<`` before a letter, ``/``, ``!``, ``?``), an inline link's ``](``,
# an entity reference (``&amp;``, ``&#35;``). A link's text escapes every bracket.
_MARKUP = r"[*`\\]|<(?=[A-Za-z/!?])|(?<![^\W_])_|_(?![^\W_])|&(?=#?\w+;)"
_INLINE_ESCAPE = re.compile(rf"({_MARKUP}|\](?=\())")
_LABEL_ESCAPE = re.compile(rf"({_MARKUP}|[\[\]])")
_ESCAPED = re.compile(r"[*`\\<_\]&~\[]")
_ORDERED = re.compile(r"^(\d{1,9})([.)])")
# A closing sequence a reader takes off an ATX heading: ``#`` after a space at its end.
_CLOSING_HASHES = re.compile(r"(?:^|\s)#+$")
_BACKTICKS = re.compile(r"`+")
_HEADING_BLOCK = re.compile(r"^#{1,6} ")
_LIST_ITEM = re.compile(r"^(?:[-*+]|\d{1,9}[.)])(?: |$)")

Skip = Callable[[etree._Element], bool]
# Classes that make an element in code something other than code (visible.not_code's): a
# ``<span>`` in a code block with none of them and no ``user-select`` in its style (Shiki's and
# Prism's tokens carry their colour there) is a highlighter's token, written as it is. Most of
# a page's elements are such tokens.
_NOT_TOKEN_CLASSES = (LINE_NUMBER_CLASSES | CODE_LABEL_CLASSES | TWOSLASH_ANNOTATIONS
                      | {HIDDEN_LABEL, "conum"})

# Tags whose start or end in a code block does more than take the text: a line break, a line's
# block, what is never code, an AsciiDoc callout's ``<b>``.
_NOT_PLAIN_IN_CODE = CODE_LINE_BLOCKS | INVISIBLE | {"br", "b"}
# Tags ``start`` reads before any block rule: each is written as it is, wherever it stands.
_INLINE_OPENERS = frozenset({"pre", "a", "img", "br", "label", "hr"}) | frozenset(HEADINGS) \
    | INLINE_CODE | frozenset(EMPHASIS)
# A code block as ``Walker.code_kind`` finds it.
PLAIN, BROKEN, MIXED = range(3)
_WALKED: tuple[int, list[str], list[str]] = (MIXED, [], [])


def _code_tag(tag: object) -> int:
    """What ``code_kind`` makes of a tag alone: ``PLAIN`` where a token may stand, ``BROKEN``
    where only a ``<br>`` or a line number may, ``MIXED`` where the walk must read it."""
    if not isinstance(tag, str) or not tag.islower():
        return MIXED
    return BROKEN if tag in _NOT_PLAIN_IN_CODE else PLAIN


def _is_gutter(span: etree._Element) -> bool:
    """A ``<span>`` that ``hidden_in_code`` leaves out as a line number, by its class alone."""
    style = span.get("style")
    return (style is None or "user-select" not in style) and \
        bool(classes(span) & LINE_NUMBER_CLASSES)


@dataclass(frozen=True, slots=True)
class Converted:
    markdown: str
    text: str
    headings: list[str]


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


def escape(text: str, *, label: bool = False) -> str:
    """Text as Markdown that reads back as the same text, in a paragraph or (``label``) in a
    link's text. GFM's strikethrough takes ``~text~`` as well as ``~~text~~``: two tildes in
    one run of text are escaped, a lone one (``~/.bashrc``) is text as it stands."""
    if not _ESCAPED.search(text):
        return text
    text = (_LABEL_ESCAPE if label else _INLINE_ESCAPE).sub(r"\\\1", text)
    return text.replace("~", "\\~") if text.count("~") > 1 else text


def line_start(line: str) -> str:
    """A line of text whose start a reader would take for a block's (a heading, a list item):
    escaped there. An ordered item's marker is escaped at its "." or ")", since a backslash
    escapes punctuation only."""
    if not _BLOCK_START.match(line):
        return line
    return _ORDERED.sub(r"\1\\\2", line, count=1) if line[0].isdigit() else "\\" + line


def block_text(text: str) -> str:
    """A line of text written as a block of its own (a code block's title)."""
    return line_start(escape(text))


def collapse(inline: list[str]) -> str:
    # str.split() and re's \s agree on what whitespace is (str.isspace); split is faster.
    return " ".join("".join(inline).split())


# iterwalk sends a comment or processing instruction only as an event of its own, never as a
# "start": the text after one (its tail, React's ``Version<!-- --> 2.0``) is the page's.
_NOT_SHOWN_EVENTS = frozenset({"comment", "pi"})
_EVENTS = ("start", "end", *sorted(_NOT_SHOWN_EVENTS))

_NO_CELL: Cell = (False, [])
_NO_NAMES: frozenset[str] = frozenset()


@dataclass(slots=True)
class Frame:
    """What one element collects until it ends: finished blocks, and the inline run after them."""

    kind: str
    element: etree._Element | None
    blocks: list[str] = field(default_factory=list)
    inline: list[str] = field(default_factory=list)
    # list: ordered?, next number; cell: header?
    ordered: bool = False
    number: int = 1
    grid: Grid[Cell] | None = None  # table: its cells, merged ones spread
    header: bool = False
    numbers: bool = False  # code: line numbers were left out of it
    fragment: bool = False  # code outside <pre>: whitespace between its line divs is not code
    label: str = ""  # tab panel: its tab's label; code: the title a label in it gives
    language: str = ""  # code: the language a label in it names
    line_at: int = -1  # code: where the open ``div.line`` began in ``inline``

    @property
    def node(self) -> etree._Element:
        """The element this frame collects for: every frame has one but the root's."""
        assert self.element is not None
        return self.element

    @property
    def cells(self) -> Grid[Cell]:
        """A table frame's cells: every table frame has its grid."""
        assert self.grid is not None
        return self.grid

    def flush(self) -> None:
        if not self.inline:
            return
        paragraph = collapse(self.inline)
        self.inline.clear()
        if paragraph:
            paragraph = paragraph.replace(f" {_HARD_BREAK}", _HARD_BREAK)
            paragraph = paragraph.replace(f"{_HARD_BREAK} ", _HARD_BREAK).strip(_HARD_BREAK)
        if paragraph:  # not only line breaks (Javadoc's <hr><br> before a signature)
            # Each line after a break starts a line of the Markdown: a reader would take a
            # "# " or "- " there for a block of its own (a heading interrupts a paragraph).
            lines = [line_start(line) for line in paragraph.split(_HARD_BREAK)]
            self.blocks.append("\\\n".join(lines))

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
        self.token_classes: dict[str, bool] = {}  # a class attribute: a token's?
        self.class_names: dict[str, frozenset[str]] = {}  # a class attribute: its names
        self.code_tags: dict[object, int] = {}  # a tag in code: PLAIN, BROKEN or MIXED
        self.urls: dict[str, str] = {}  # an href or src: its URL as written

    @property
    def top(self) -> Frame:
        return self.stack[-1]

    # ----------------------------------------------------------------------- the walk

    def run(self, root: etree._Element) -> Converted:
        # Each lxml read (``tag``, ``text``, ``tail``, an attribute) makes a new string: an
        # element's tag is read once here and handed on, lowered, with its classes.
        stack = self.stack
        add_text, is_token, names_of = self.add_text, self.is_token, self.names_of
        walker = etree.iterwalk(root, events=_EVENTS)
        skipped: etree._Element | None = None
        for event, element in walker:
            if skipped is not None:
                # A skipped element's tail is visible text. lxml may or may not send the "end"
                # of a skipped subtree; either way its tail comes before whatever comes next.
                add_text(skipped.tail)
                if event == "end" and element is skipped:
                    skipped = None
                    continue
                skipped = None
            if event in _NOT_SHOWN_EVENTS:  # a comment or processing instruction: its tail is
                add_text(element.tail)
                continue
            top = stack[-1]
            if event == "end":
                if top.element is element:
                    self.finish()
                elif (tag := element.tag) in BLOCK_ENDS:
                    self.block_end(top, element, tag)
                if element is not root and (text := element.tail):
                    add_text(text)
                continue
            tag = element.tag
            if top.kind == "pre" and tag == "span" and is_token(element):
                add_text(element.text)  # all hidden and start would do with a token
                continue
            if not isinstance(tag, str):  # an entity reference (comments come as events)
                walker.skip_subtree()
                skipped = element
                continue
            tag = tag.lower()
            bare = not len(element.attrib)
            names = _NO_NAMES if bare else names_of(element.get("class"))
            if self.hidden(element, tag, names, bare, top):
                walker.skip_subtree()
                skipped = element
                continue
            self.start(element, tag, names, bare, top)
            opened = stack[-1]
            kind, pieces, inline = _WALKED if opened.element is not element or \
                opened.kind != "pre" else self.code_kind(element, opened)
            if kind != MIXED:
                self.add_code(opened, pieces, inline)
                walker.skip_subtree()  # the next event is this block's own "end"
            elif (text := element.text):
                add_text(text)
        markdown = self.stack[0].take()
        return Converted(markdown, collapse([" ".join(self.text)]), self.headings)

    def names_of(self, value: str | None) -> frozenset[str]:
        """``visible.classes`` of an element whose ``class`` is ``value``, once per value."""
        if not value:
            return _NO_NAMES
        names = self.class_names.get(value)
        if names is None:
            names = self.class_names[value] = frozenset(value.split())
        return names

    def is_token(self, element: etree._Element) -> bool:
        """A code block's ``<span>`` that is only code (see ``hidden_in_code``)."""
        style = element.get("style")
        if style is not None and "user-select" in style:
            return False  # maybe ``unselectable``
        value = element.get("class")
        if value is None:
            return True
        known = self.token_classes.get(value)
        return self.token_class(value) if known is None else known

    def token_class(self, value: str) -> bool:
        """A ``class`` attribute that a token may have: none of its names is furniture."""
        known = self.token_classes[value] = not (set(value.split()) & _NOT_TOKEN_CLASSES)
        return known

    def code_kind(self, block: etree._Element, top: Frame) -> tuple[int, list[str], list[str]]:
        """How plain a code block is, and what the walk would take of it, in one pass:
        ``PLAIN`` when every element in it is only code (a tag that neither breaks a line nor
        hides, ``start`` and ``hidden_in_code``, with neither a class nor a style that is not a
        token's, ``is_token``); ``BROKEN`` when the others are only ``<br>`` (a newline in the
        inline run, not in the text) and empty line-number ``<span>`` (left out); then the
        block's texts and its inline run, for ``add_code``. Else ``MIXED`` and nothing, for the
        walk, which marks ``top.numbers`` for every line number seen here as well."""
        # is_token inlined: most of a page's elements are a code block's tokens.
        pieces: list[str] = []
        inline: list[str] = []
        if text := block.text:
            pieces.append(text)
            inline.append(text)
        kind = PLAIN
        token_classes, token_class, tag_kinds = self.token_classes, self.token_class, \
            self.code_tags
        for event, element in etree.iterwalk(block, events=_EVENTS):
            if element is block:
                continue
            if event != "start":  # an end, or a comment or processing instruction: the tail
                if text := element.tail:
                    pieces.append(text)
                    inline.append(text)
                continue
            tag = element.tag
            tag_kind = tag_kinds.get(tag)
            if tag_kind is None:
                tag_kind = tag_kinds[tag] = _code_tag(tag)
            if tag_kind == PLAIN:
                style = element.get("style")
                if style is None or "user-select" not in style:
                    value = element.get("class")
                    known = True if value is None else token_classes.get(value)
                    if known or (known is None and token_class(value)):
                        if text := element.text:
                            pieces.append(text)
                            inline.append(text)
                        continue
            elif tag_kind == MIXED:
                return _WALKED
            if tag == "br":
                kind = BROKEN
                inline.append("\n")
                continue
            if tag == "span" and not len(element) and _is_gutter(element):
                kind = BROKEN
                top.numbers = True
                continue
            return _WALKED
        return kind, pieces, inline

    def add_code(self, top: Frame, pieces: list[str], inline: list[str]) -> None:
        """``add_text`` of a code block ``code_kind`` read: its texts, and its inline run."""
        self.text.extend(pieces)
        if self.in_heading:
            self.heading_text.extend(pieces)
        if top.fragment:
            inline = [text for text in inline if "\n" not in text or text.strip()]
        top.inline.extend(inline)

    def hidden(self, element: etree._Element, tag: str, names: frozenset[str], bare: bool,
               top: Frame) -> bool:
        if top.kind == "pre":
            return self.hidden_in_code(element, tag, names, top)
        if bare and tag not in HIDDEN_BARE_TAGS:
            # No attribute for the rules below to read: only the page's own rule may skip it.
            return self.skip is not None and self.skip(element)
        if not_content(element, tag, names):
            return True
        if is_tab_strip(element, names) or is_theme_copy(element):
            return True  # each panel is written under its own label; a theme's copy once
        title = icon_title(element, names)
        if title is not None:  # an Asciidoctor admonition's icon: the callout's title
            if title:
                top.flush()
                top.blocks.append(f"**{escape(title)}**")
                self.text.append(title)
            return True
        return self.skip is not None and self.skip(element)

    def hidden_in_code(self, element: etree._Element, tag: str, names: AbstractSet[str],
                       top: Frame) -> bool:
        """What a code block draws but is not its code; code is otherwise kept whole, even a
        token whose class looks like furniture."""
        if tag in INVISIBLE:
            return True
        if names & LINE_NUMBER_CLASSES or unselectable(element):
            top.numbers = True
            return True
        if names & CODE_LABEL_CLASSES:
            text = label_text(element)
            if TITLE_LABEL in names:
                top.label = top.label or text
                self.text.append(text)  # drawn as the block's header
            elif LANGUAGE_LABEL in names and not top.language and _INFO_WORD.match(text):
                top.language = _LANGUAGE_ALIASES.get(text.lower(), text.lower())
            return True
        if is_code_callout(element, names):
            # The space that set the callout off from the code is not code either.
            top.inline.append(top.inline.pop().rstrip(" \t") if top.inline else "")
            return True
        return HIDDEN_LABEL in names or bool(names & TWOSLASH_ANNOTATIONS
                                             and "twoslash" in classes(top.node))

    def add_text(self, text: str | None) -> None:
        if not text:
            return
        self.text.append(text)
        if self.in_heading:
            self.heading_text.append(text)
        top = self.stack[-1]
        if top.kind in ("pre", "code"):
            if top.fragment and "\n" in text and not text.strip():
                return  # between a Doxygen fragment's line divs: not laid out
            top.inline.append(text)
        elif top.kind in ("list", "table") and not text.strip():
            return  # whitespace between items and rows
        else:
            top.inline.append(escape(text, label=self.in_link))

    # ----------------------------------------------------------------------- start tags

    def push(self, kind: str, element: etree._Element, **extra: object) -> Frame:
        frame = Frame(kind, element, **extra)  # type: ignore[arg-type]
        self.stack.append(frame)
        return frame

    def start(self, element: etree._Element, tag: str, names: frozenset[str], bare: bool,
              top: Frame) -> None:
        if top.kind == "pre":
            if tag == "br":
                top.inline.append("\n")
            elif tag in CODE_LINE_BLOCKS:
                self.line_break(top)
                if tag == "div" and CODE_LINE_CLASS in names:
                    top.line_at = len(top.inline)
            return
        if top.kind == "code" or (self.in_heading and tag not in INLINE_IN_HEADING):
            if tag == "br" or tag in BLOCK_ENDS or "where" in names:
                top.inline.append(" ")  # rustdoc's ``where`` clauses sit on lines of their own
            return
        if tag in _INLINE_OPENERS:
            if self.start_inline(element, tag, top):
                return
        elif tag == "div" and names & CODE_DIV_CLASSES:
            top.flush()
            self.push("pre", element, fragment=True)
            return
        if not bare and (label := tab_label(element)) is not None:
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
        elif tag == "blockquote" or (names and is_callout(tag, names)):
            top.flush()
            self.containers += 1
            self.push("quote", element)
        elif tag == "table" and not is_code_table(element) and not is_layout_table(element):
            top.flush()
            self.containers += 1
            self.push("table", element, grid=Grid(_NO_CELL))
        elif tag in CELLS and top.kind == "table":
            self.containers += 1
            self.push("cell", element, header=tag == "th" or self.in_thead(element))
        elif tag == "caption" and top.kind == "table":
            self.containers += 1
            self.push("caption", element)
        elif tag in ("dt", "summary") or (names and is_callout_title(names)):
            top.flush()
            self.push("title", element)
        elif tag in BLOCKS or tag in ("tr", "td", "th", "tbody", "thead", "tfoot"):
            top.flush()

    def start_inline(self, element: etree._Element, tag: str, top: Frame) -> bool:
        """``start`` of a tag in ``_INLINE_OPENERS``: False when the tag is not taken here (a
        link in a link, which is its text) and the block rules are asked."""
        if tag == "pre":
            top.flush()
            self.push("pre", element, fragment=False)
        elif tag in HEADINGS:
            top.flush()
            self.in_heading = True
            self.push("heading", element)
        elif len(self.stack) >= MAX_FRAMES and (tag in INLINE_CODE or tag in EMPHASIS
                                                 or tag == "a"):
            return True  # markup nested this deep is noise: its text flows on unformatted
        elif tag in INLINE_CODE:
            if len(element) and element.find(".//pre") is not None:
                # Rouge's line-number table inside <code> (Jekyll's {% highlight linenos %}):
                # a wrapper of the code block, not inline code.
                top.flush()
            else:
                self.push("code", element)
        elif tag == "a":
            if self.in_link:
                return False
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
        else:  # hr
            top.flush()
            top.blocks.append("---")
        return True

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
        url = self.urls.get(href)
        if url is None:
            url = urljoin(self.base_url, href.strip())
            url = self.urls[href] = f"<{url}>" if any(c in url for c in " ()<>") else url
        return url

    # ----------------------------------------------------------------------- end tags

    @staticmethod
    def line_break(frame: Frame) -> None:
        """A block element in code starts and ends a line, as a browser lays it out (Expressive
        Code and Doxygen put each line in a ``<div>`` with no newline between them)."""
        if frame.inline and not frame.inline[-1].endswith("\n"):
            frame.inline.append("\n")

    @classmethod
    def end_line(cls, frame: Frame, element: etree._Element) -> None:
        """A block's end in code; an empty ``div.line`` is a blank line, as CSS draws it."""
        if frame.line_at == len(frame.inline) and element.tag == "div" and \
                CODE_LINE_CLASS in classes(element):
            frame.inline.append("\n")
        else:
            cls.line_break(frame)
        frame.line_at = -1

    def block_end(self, top: Frame, element: etree._Element, tag: str) -> None:
        """The end of a block element that opened no frame of its own."""
        if top.kind == "pre":
            self.end_line(top, element)
        elif top.kind == "table" and tag == "tr":
            top.cells.end_row()
        elif top.kind == "heading" or top.kind == "code":
            top.inline.append(" ")  # a heading's text stays in the heading
        else:
            top.flush()

    def finish(self) -> None:
        """The end of the open frame's element: the frame written into its parent."""
        frame = self.stack.pop()
        _FINISH[frame.kind](self, frame, self.stack[-1])

    def end_pre(self, frame: Frame, parent: Frame) -> None:
        code = "".join(frame.inline)
        if frame.node.tag == "pre" and (frame.node.text or "").startswith("\n"):
            code = code[1:]  # HTML drops a newline right after <pre>; one inside <code> stays
        if frame.numbers and not code.strip():
            return  # the line-number column of a code table
        if frame.label:  # the file name a highlighter draws as the block's header
            parent.blocks.append(block_text(frame.label))
        parent.blocks.append(fence(code, code_language(frame.node) or frame.language))

    def end_heading(self, frame: Frame, parent: Frame) -> None:
        self.in_heading = False
        text = collapse(frame.inline).replace(_HARD_BREAK, " ")
        if text:
            if _CLOSING_HASHES.search(text):  # a reader would take it off as a closing sequence
                text = f"{text[:-1]}\\#"
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
            return
        # Text that ends in "!" right before the link (rustdoc's "impl !Send") would make it
        # an image; the brackets in the label's text were escaped as it came.
        if parent.inline and parent.inline[-1].endswith("!"):
            parent.inline[-1] = parent.inline[-1][:-1] + "\\!"
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
        cell = frame.node
        parent.cells.add((frame.header, blocks), span(cell.get("rowspan"), rows=True),
                        span(cell.get("colspan")))

    def end_table(self, frame: Frame, parent: Frame) -> None:
        self.containers -= 1
        frame.flush()
        frame.cells.finish()
        rows = [row for row in frame.cells.rows if row]
        parent.flush()
        parent.blocks.extend(frame.blocks)  # caption and any stray text, before the table
        # A row holding a heading (Doxygen's member tables: "Public Types", then its members)
        # ends the table before it: the heading is the page's, and the rows after it a table
        # of their own.
        part: list[GridRow] = []
        for row in rows:
            blocks = [block for (_, cell), own in row if own for block in cell]
            if any(_HEADING_BLOCK.match(block) for block in blocks):
                add_table(part, parent.blocks)
                parent.blocks.extend(blocks)
                part = []
            else:
                part.append(row)
        add_table(part, parent.blocks)


_FINISH: dict[str, Callable[[Walker, Frame, Frame], None]] = {
    kind: getattr(Walker, f"end_{kind}") for kind in (
        "pre", "heading", "code", "link", "emphasis", "title", "tab", "list", "li", "dd",
        "quote", "caption", "cell", "table")}


def convert(root: etree._Element, base_url: str, skip: Skip | None = None) -> Converted:
    """Markdown, visible text and h1–h4 headings of ``root``; ``skip(element)`` drops an element
    with everything in it (navigation, buttons) but not the text that follows it."""
    return Walker(base_url, skip).run(root)
