"""Tables as Markdown: merged cells (``rowspan``, ``colspan``) laid out on a grid, so each cell
stays under its column's header, and the two forms a table is written in.

A converter that drops the two attributes shifts every later cell of the row (and of the rows
under a ``rowspan``) one column left, under another header (crawl4ai#1327, #1920, #2007). The
converter lays out the tables it writes with :class:`Grid`; the fidelity check lays out its
own reading of the same tables with it and reads the two forms back.

The forms: a GFM pipe table when every cell is one line, a merged cell's text in every position
it covers; else a list, an item per row, each cell under its column's header (``**Name**:``),
a cell that spans rows in each row's item, one that spans columns once, under its first
column's header.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

MAX_SPAN = 100
"""Rows or columns one cell covers at most: a page's ``colspan=1000`` must not make a grid of a
thousand columns (HTML's own limits are 1,000 columns and 65,534 rows)."""

HARD_BREAK = "\x00"
"""A ``<br>`` in the converter's inline text, until its block is written."""
LABEL_SEPARATOR = ": "
"""After a column's name in the list form, on the line of the cell's first block."""

Value = TypeVar("Value")
Cell = tuple[bool, list[str]]
"""A cell as the converter writes it: header?, its blocks as Markdown."""
GridRow = list[tuple[Cell, bool]]


def span(value: str | None, *, rows: bool = False) -> int:
    """A ``rowspan``/``colspan`` attribute as a count; ``rowspan=0`` covers the rest of the
    table (HTML: the rest of its section)."""
    text = (value or "1").strip()
    if not text.isdigit():
        return 1
    number = int(text)
    if number == 0:
        return MAX_SPAN if rows else 1
    return min(number, MAX_SPAN)


class Grid(Generic[Value]):
    """Rows of cells as the HTML gives them, laid out on a grid: ``add(value, rowspan, colspan)``
    per cell, ``end_row()`` after each row; ``rows`` holds (value, own) per position, ``own``
    False where a merged cell covers it, and ``empty`` where no cell does."""

    def __init__(self, empty: Value) -> None:
        self.empty = empty
        self.rows: list[list[tuple[Value, bool]]] = []
        self._row: list[tuple[Value, bool]] = []
        self._pending: dict[int, tuple[Value, int]] = {}  # column → (value, rows still covered)

    def _covered(self) -> None:
        """Place the cells of rows above that reach into this row, at its next column."""
        column = len(self._row)
        while column in self._pending:
            value, left = self._pending.pop(column)
            self._row.append((value, False))
            if left > 1:
                self._pending[column] = (value, left - 1)
            column += 1

    def add(self, value: Value, rowspan: int, colspan: int) -> None:
        self._covered()
        for offset in range(colspan):
            column = len(self._row)
            self._row.append((value, offset == 0))
            if rowspan > 1:
                self._pending[column] = (value, rowspan - 1)

    def end_row(self) -> None:
        self._covered()
        # A row shorter than the cells reaching into it from above: the gap is an empty cell.
        while any(column >= len(self._row) for column in self._pending):
            if len(self._row) not in self._pending:
                self._row.append((self.empty, False))
            self._covered()
        self.rows.append(self._row)
        self._row = []

    def finish(self) -> None:
        """End a row whose cells came without a ``<tr>`` end."""
        if self._row:
            self.end_row()


def starts_cell(row: Sequence[tuple[object, bool]], column: int) -> bool:
    """Whether ``column`` is where a cell of ``row`` starts: not the continuation of the cell
    to its left (a ``colspan``); a cell reaching down from the row above starts again."""
    return column == 0 or row[column - 1][0] is not row[column][0]


def cell_text(blocks: list[str]) -> str:
    return "".join(blocks).replace("|", "\\|").replace("\\\n", "<br>").replace(HARD_BREAK, "<br>")


def pipe_table(rows: list[GridRow]) -> str:
    """A GFM pipe table; a table without a header row (docutils) gets an empty one, since GFM
    needs one and promoting the first data row would misstate it."""
    width = max(len(row) for row in rows)
    if not all(is_header for (is_header, _), _ in rows[0]):
        rows = [[((True, []), True)] * width, *rows]
    lines = []
    for number, row in enumerate(rows):
        cells = [cell_text(blocks) for (_, blocks), _ in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if number == 0:
            lines.append("|" + " --- |" * width)
    return "\n".join(lines)


def table_as_list(rows: list[GridRow]) -> str:
    """A table whose cells hold blocks (code, lists, paragraphs): one list item per row, each
    cell under its column's header, so no code block is squeezed into a pipe-table row."""
    header: list[str] = []
    if all(is_header for (is_header, _), _ in rows[0]) and len(rows) > 1:
        header = ["".join(blocks).replace(HARD_BREAK, " ") for (_, blocks), _ in rows[0]]
        rows = rows[1:]
    items = []
    for row in rows:
        parts: list[str] = []
        for column, ((_, blocks), _) in enumerate(row):
            if not blocks or not starts_cell(row, column):
                continue
            blocks = [block.replace(HARD_BREAK, "\\\n") for block in blocks]
            name = header[column] if column < len(header) else ""
            if name and "\n" not in blocks[0] and not blocks[0].startswith(("```", "|", "- ")):
                parts.append(f"**{name}**{LABEL_SEPARATOR}{blocks[0]}")
                parts.extend(blocks[1:])
            else:
                parts.extend([f"**{name}**:"] if name else [])
                parts.extend(blocks)
        if parts:
            items.append(indent("\n\n".join(parts), "- ", "  "))
    return "\n\n".join(items)


def add_table(rows: list[GridRow], blocks: list[str]) -> None:
    """Append ``rows`` to ``blocks`` in the form their cells allow."""
    if not rows:
        return
    simple = all(len(cell) <= 1 and "\n" not in "".join(cell)
                 for row in rows for (_, cell), _ in row)
    blocks.append(pipe_table(rows) if simple else table_as_list(rows))


def indent(block: str, first: str, rest: str) -> str:
    lines = block.split("\n")
    return "\n".join([first + lines[0], *(rest + line if line else "" for line in lines[1:])])
