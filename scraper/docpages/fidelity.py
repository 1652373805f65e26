"""A page's fidelity: of what its page shows (:mod:`.shown`, read from the tree on its own), how
much its Markdown read back (:mod:`.readback`) keeps as structure. Per form, how many the page
shows and how many the Markdown keeps:

- code blocks, byte-exact, in order, each once: a block whose code is not the next fenced block
  (lost, or after a block the page does not show: a theme's second copy, a label taken for
  code) is not exact;
- tab panels under their label: a bold line of the label, the panel's first text right after;
- tables with every cell under its column's header: a pipe table of the same cells on the same
  grid (a merged cell in every position it covers), or the list form, each row's cells after
  their columns' names;
- callouts as a quote whose first line is the title, the callout's text in it.

A table or callout nested deeper than the converter nests is written flat: shown, not kept.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable

from lxml import etree

from scraper.docpages.fidelityrecord import Fidelity
from scraper.docpages.readback import Reading, read
from scraper.docpages.shown import Shown, ShownTable, read_shown
from scraper.docpages.visible import squeeze

LIST_WINDOW = 200_000
"""Characters of the Markdown's text a list-form table is looked for in (after the last table
kept) and a callout's text in (from its title): a page's tables and callouts cost their size,
not their size times the page's."""


def exact_codes(expected: list[str], found: list[str]) -> int:
    """How many of ``expected`` are, in order, the next of ``found``; after one that is not,
    the count goes on from where that one is (if anywhere)."""
    where: dict[str, list[int]] = defaultdict(list)
    for index, code in enumerate(found):
        where[code].append(index)
    exact, start = 0, 0
    for code in expected:
        if start < len(found) and found[start] == code:
            exact += 1
            start += 1
            continue
        positions = where.get(code)
        if positions:
            index = bisect_left(positions, start)
            if index < len(positions):
                start = positions[index] + 1
    return exact


def measure(markdown: str, shown_codes: Iterable[str]) -> Fidelity:
    """Code blocks only: ``shown_codes`` against the Markdown's fenced blocks."""
    expected = list(shown_codes)
    return Fidelity(len(expected), exact_codes(expected, read(markdown, prose=False).codes))


def labelled_tabs(tabs: list[tuple[str, str]], reading: Reading) -> int:
    count, at = 0, 0
    for label, first in tabs:
        hit = reading.next_label(squeeze(label), at) if label else None
        if hit is not None and reading.plain.startswith(first, hit[1]):
            count += 1
            at = hit[1]
    return count


def pipe_rows(table: ShownTable) -> list[list[str]]:
    """The cells of ``table`` as the converter's pipe table holds them: a headerless table under
    an empty header row, short rows filled with empty cells."""
    width = max(len(row) for row in table.rows)
    rows = [[text for text, _, _ in row] + [""] * (width - len(row)) for row in table.rows]
    return rows if table.header else [[""] * width, *rows]


def listed(table: ShownTable) -> str:
    """The text of ``table`` in the converter's list form, read back: per row, each cell that
    starts there (a cell spanning rows starts in each) after its column's name."""
    rows, names = table.rows, []
    if table.header and len(rows) > 1:
        names, rows = [text for text, _, _ in rows[0]], rows[1:]
    parts = []
    for row in rows:
        for column, (text, starts, images) in enumerate(row):
            if not starts or not (text or images):
                continue
            name = names[column] if column < len(names) else ""
            parts.append(f"{name}:{text}" if name else text)
    return "".join(parts)


def kept_tables(tables: list[ShownTable | None], reading: Reading) -> int:
    count, at = 0, 0
    for table in tables:
        if table is None:
            continue  # nested deeper than the converter nests: written flat
        candidate = reading.next_table(pipe_rows(table), at)
        if candidate is not None:
            count += 1
            at = candidate.end
            continue
        text = listed(table)
        found = reading.plain.find(text, at, at + len(text) + LIST_WINDOW) if text else -1
        if found >= 0:
            count += 1
            at = found  # a table inside one of its cells comes after this point
    return count


def in_order(needle: str, haystack: str) -> bool:
    """Every character of ``needle`` in ``haystack``, in order (the Markdown may add labels and
    titles of its own between them)."""
    if needle in haystack:
        return True  # in order, and next to each other
    position = 0
    for char in needle:
        position = haystack.find(char, position) + 1
        if not position:
            return False
    return True


def kept_callouts(callouts: list[tuple[str, str] | None], reading: Reading) -> int:
    count, at = 0, 0
    starts = [start for start, _ in reading.quotes]
    for callout in callouts:
        if callout is None:
            continue
        title, text = callout
        key = squeeze(title)
        if key:
            hit = reading.next_quote(key, at)
            body = None if hit is None else (hit[0] + len(key), hit[1])
        else:
            index = bisect_left(starts, at)
            body = reading.quotes[index] if index < len(reading.quotes) else None
        if body is not None and in_order(
                text, reading.plain[body[0]:min(body[1], body[0] + LIST_WINDOW)]):
            count += 1
            at = body[0]  # a callout inside this one comes after this point
    return count


def compare(shown: Shown, markdown: str) -> Fidelity:
    reading = read(markdown, prose=bool(shown.tabs or shown.tables or shown.callouts))
    return Fidelity(len(shown.codes), exact_codes(shown.codes, reading.codes),
                    len(shown.tabs), labelled_tabs(shown.tabs, reading),
                    len(shown.tables), kept_tables(shown.tables, reading),
                    len(shown.callouts), kept_callouts(shown.callouts, reading))


def check(root: etree._Element, markdown: str,
          skip: Callable[[etree._Element], bool] | None = None) -> Fidelity:
    """The fidelity of ``markdown`` as the conversion of ``root``, whose furniture ``skip``
    names (the converter's own rule for it)."""
    return compare(read_shown(root, skip), markdown)
