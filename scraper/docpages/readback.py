"""The converter's Markdown read back as a reader gets it, in one pass over its lines: the code of
every fenced block, the text without markup or whitespace (``plain``, with where each line's
text starts in it), the pipe tables' cells, the lines that are a bold label alone, and the
quotes. What :mod:`.fidelity` holds against what the page shows (:mod:`.shown`).

The reading knows the Markdown the converter writes (scraper/docpages/markdown.py): the markup
it makes of text (emphasis with ``*``, ``~~``, code spans, links, images, ``<br>`` in table
cells) and the escapes it puts before text that would read as markup.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field

from scraper.docpages.visible import squeeze

# An opening fence after the containers it sits in: quote marks, list markers, indentation.
_OPENING = re.compile(r"^((?:>[ ]?|[ ]|[-*+][ ]|\d{1,9}[.)][ ])*)(`{3,})[^`]*$")
_MARKER = re.compile(r"[-*+]|\d{1,9}[.)]")
# What a line's blocks start with: indentation, quote marks, list markers, a definition's ": ".
_PREFIX = re.compile(r"^(?:[ ]*(?:>[ ]?|(?:[-*+]|\d{1,9}[.)]|:)(?=[ ]|$)[ ]?))*[ ]*")
_HEADING = re.compile(r"^#{1,6}(?:[ ]+|$)")
_RULE = re.compile(r"^(?:-{3,}|\*{3,}|_{3,})$")
_DELIMITER_ROW = re.compile(r"^\|(?:[ ]*:?-+:?[ ]*\|)+$")
_BOLD_LINE = re.compile(r"^\*\*(.+)\*\*$")
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_HARD_BREAK = "\\"
_SPECIAL = re.compile(r"[\\`!\[\]*~<]")
# What a line's prefix (_PREFIX) may start with besides a digit: any other line has none.
_PREFIX_STARTS = frozenset(" >-*+:")
_RULE_STARTS = frozenset("-*_")
_CELL_BORDER = re.compile(r"(?<!\\)\|")
_TARGET_MARKS = re.compile(r"[\\() ]")


@dataclass(slots=True)
class PipeTable:
    start: int  # where its first line's text starts in ``plain``
    end: int  # where the text after its last line starts
    rows: list[list[str]] = field(default_factory=list)  # cells: text without whitespace


@dataclass(slots=True)
class Reading:
    codes: list[str] = field(default_factory=list)
    plain: str = ""
    tables: list[PipeTable] = field(default_factory=list)
    # A line that is a bold label alone (a tab's label, a callout's title): text → (where it
    # starts, where the text after the line starts) in ``plain``, in order.
    labels: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    quotes: list[tuple[int, int]] = field(default_factory=list)  # a quote's text: start, end
    # A quote's first line: (where it starts, where the quote's text ends) by its text.
    quote_heads: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    _by_rows: dict[tuple[tuple[str, ...], ...], list[PipeTable]] | None = None

    def next_label(self, text: str, at: int) -> tuple[int, int] | None:
        return _next(self.labels.get(text), at)

    def next_quote(self, head: str, at: int) -> tuple[int, int] | None:
        return _next(self.quote_heads.get(head), at)

    def next_table(self, rows: list[list[str]], at: int) -> PipeTable | None:
        """The first pipe table from ``at`` on whose cells are ``rows``."""
        if self._by_rows is None:
            self._by_rows = {}
            for table in self.tables:
                self._by_rows.setdefault(_key(table.rows), []).append(table)
        found = self._by_rows.get(_key(rows), [])
        index = bisect_left([table.start for table in found], at)
        return found[index] if index < len(found) else None


def _key(rows: list[list[str]]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(row) for row in rows)


def _next(found: list[tuple[int, int]] | None, at: int) -> tuple[int, int] | None:
    if not found:
        return None
    index = bisect_left(found, (at, -1))
    return found[index] if index < len(found) else None


def continuation(prefix: str) -> str:
    """What the lines after an opening fence start with: its quote marks, and the indentation
    a list marker stands for."""
    return _MARKER.sub(lambda marker: " " * len(marker.group(0)), prefix)


def read_fences(markdown: str) -> list[str]:
    """The code of every fenced block, as a Markdown reader gets it back."""
    return read(markdown, prose=False).codes


def read(markdown: str, *, prose: bool = True) -> Reading:
    """``prose``: read more than the fenced code (a page that shows no tab, table or callout
    has nothing else to hold against it)."""
    reading = Reading()
    plain: list[str] = []
    size = 0  # characters in ``plain`` so far
    lines = markdown.split("\n")
    table: PipeTable | None = None
    open_quotes: list[tuple[int, int, str]] = []  # depth, where its text starts, its head

    def quotes_to(depth: int, head: str) -> None:
        """Close the quotes deeper than the line's; a deeper line opens one, headed by it."""
        while open_quotes and open_quotes[-1][0] > depth:
            _, start, key = open_quotes.pop()
            reading.quotes.append((start, size))
            reading.quote_heads.setdefault(key, []).append((start, size))
        if depth and (not open_quotes or open_quotes[-1][0] < depth):
            open_quotes.append((depth, size, head))

    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        opening = _OPENING.match(line) if "```" in line else None
        if opening:
            quotes_to(opening.group(1).count(">"), "")
            rest, marks = continuation(opening.group(1)), opening.group(2)
            closing, bare = rest + marks, rest.rstrip()
            try:
                end = lines.index(closing, i)
            except ValueError:
                end = len(lines)
            body = lines[i:end] if not rest else [
                inner[len(rest):] if inner.startswith(rest) else
                "" if inner == bare else "\x00"  # \x00: a line the block lost
                for inner in lines[i:end]]
            i = end + 1
            code = "\n".join(body)
            reading.codes.append(code)
            text = squeeze(code)
            plain.append(text)
            size += len(text)
            table = None
            continue
        if not prose:
            continue
        if line[:1] in _PREFIX_STARTS or line[:1].isdecimal():
            marks = _PREFIX.match(line)  # it matches every line, if only with nothing
            prefix = marks.group(0) if marks else ""
            content = line[len(prefix):]
        else:
            prefix, content = "", line
        if content.startswith("|"):
            quotes_to(prefix.count(">"), "")
            if _DELIMITER_ROW.match(content):
                continue
            if table is None:
                table = PipeTable(size, size)
                reading.tables.append(table)
            cells = [squeeze(inline_plain(cell)) for cell in split_row(content)]
            table.rows.append(cells)
            text = "".join(cells)
            plain.append(text)
            size += len(text)
            table.end = size
            continue
        table = None
        heading = _HEADING.match(content) if content[:1] == "#" else None
        if heading:
            content = content[heading.end():]
        elif content[:1] in _RULE_STARTS and _RULE.match(content):
            content = ""
        if content.endswith(_HARD_BREAK) and not content.endswith("\\\\"):
            content = content[:-1]
        text = squeeze(inline_plain(content))
        if open_quotes or prefix:
            quotes_to(prefix.count(">"), text)
        if text and _BOLD_LINE.match(content):
            reading.labels.setdefault(text, []).append((size, size + len(text)))
        plain.append(text)
        size += len(text)
    quotes_to(0, "")
    reading.plain = "".join(plain)
    reading.quotes.sort()  # closed innermost first
    for found in reading.quote_heads.values():
        found.sort()
    return reading


def split_row(line: str) -> list[str]:
    """A pipe table row's cells: split at pipes that are not escaped (right after a backslash,
    whatever is before it), outer pipes dropped."""
    cells = _CELL_BORDER.split(line)
    return cells[1:-1] if len(cells) >= 2 else cells


def inline_plain(text: str) -> str:
    """Inline Markdown as the text a reader sees: escapes undone, code spans' code kept,
    emphasis and strikethrough marks, images and link targets dropped, ``<br>`` dropped. One
    pass over the text after one pass that pairs its code spans and brackets: a line of a
    thousand "[" costs a thousand steps, not a million."""
    if _SPECIAL.search(text) is None:
        return text
    spans = _code_spans(text)
    closes = _brackets(text, spans)
    skip_at: dict[int, int] = {}  # a link's "]" → where its "(target)" ends
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        special = _SPECIAL.search(text, i)
        if special is None:
            out.append(text[i:])
            break
        if special.start() > i:
            out.append(text[i:special.start()])
            i = special.start()
        char = text[i]
        if i in skip_at:
            i = skip_at.pop(i)
        elif char == "\\" and i + 1 < n and text[i + 1] in _PUNCTUATION:
            out.append(text[i + 1])
            i += 2
        elif i in spans:
            content, end = spans[i]
            out.append(text[content[0]:content[1]])
            i = end
        elif char == "!" and (end := _link_end(text, i + 1, closes)):
            i = end  # an image: the reader sees the picture, not its text
        elif char == "[" and (end := _link_end(text, i, closes)):
            skip_at[closes[i]] = end  # the label is read on, its target is not
            i += 1
        elif char == "*":
            i += 1
        elif char == "~" and text.startswith("~~", i):
            i += 2
        elif char == "<" and text.startswith("<br>", i):
            i += 4
        else:
            out.append(char)
            i += 1
    return "".join(out)


_TICKS = re.compile(r"`+")


def _code_spans(text: str) -> dict[int, tuple[tuple[int, int], int]]:
    """Each code span's opening → (its code's start and end, where it ends): a run of
    backticks closes at the next run of the same length (CommonMark), runs not escaped."""
    if "`" not in text:
        return {}
    runs = [(m.start(), m.end() - m.start()) for m in _TICKS.finditer(text)
            if not _escaped(text, m.start())]
    following: list[int] = [-1] * len(runs)  # the next run of the same length, by index
    last: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        following[index] = last.get(runs[index][1], -1)
        last[runs[index][1]] = index
    spans: dict[int, tuple[tuple[int, int], int]] = {}
    index = 0
    while index < len(runs):
        start, length = runs[index]
        closing = following[index]
        if closing < 0:
            index += 1
            continue
        end = runs[closing][0]
        spans[start] = ((start + length, end), end + length)
        index = closing + 1
    return spans


def _escaped(text: str, i: int) -> bool:
    backslashes = 0
    while i > backslashes and text[i - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _brackets(text: str, spans: dict[int, tuple[tuple[int, int], int]]) -> dict[int, int]:
    """Each "[" that a "]" closes → that "]" (escapes and code spans skipped). Only the
    characters that can matter are visited (a code span opens at a backtick)."""
    closes: dict[int, int] = {}
    if "[" not in text:
        return closes
    opened: list[int] = []
    i = 0
    for found in _BRACKET_MARKS.finditer(text):
        at = found.start()
        if at < i:
            continue  # escaped, or inside a code span
        char = text[at]
        if char == "\\":
            i = at + 2
            continue
        if at in spans:
            i = spans[at][1]
            continue
        if char == "[":
            opened.append(at)
        elif char == "]" and opened:
            closes[opened.pop()] = at
        i = at + 1
    return closes


_BRACKET_MARKS = re.compile(r"[\\\[\]`]")


def _link_end(text: str, i: int, closes: dict[int, int]) -> int:
    """Where a link (or image) whose label opens at ``i`` ends, after its ``(target)``; 0 when
    the bracket does not open one."""
    close = closes.get(i, -1) if text.startswith("[", i) else -1
    if close < 0 or not text.startswith("(", close + 1):
        return 0
    j = close + 2
    if text.startswith("<", j):
        end = text.find(">)", j)
        return end + 2 if end >= 0 else 0
    depth = 1
    while (mark := _TARGET_MARKS.search(text, j)) is not None:
        j = mark.start()
        char = text[j]
        if char == "\\":
            j += 2
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        else:
            return 0  # a target with a space is written in <…>
        j += 1
    return 0
