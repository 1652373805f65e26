"""Fidelity is not the price of speed (issue 37): every item the docs and trending spiders make of
every real page the project has (tests/data/docs, tests/data/generators, the trending pages) is
byte for byte the one the code at dfcdfdb wrote, recorded in tests/data/page_items/ by
``python -m tests.support.pageitems``, but where a fix changed an item on purpose: the text after
an HTML comment, which the walks dropped (one page, docusaurus-tabs-rocketmq-docker;
test_docs_comments.py). Code blocks kept exact are in the items (``code_blocks_exact``), so they
are compared too."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.pageitems import (
    docs_lines,
    docs_pages,
    read_golden,
    trending_lines,
    trending_pages,
)


def first_difference(expected: list[str], got: list[str]) -> str:
    for index, (old, new) in enumerate(zip(expected, got, strict=False)):
        if old != new:
            at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
                      min(len(old), len(new)))
            return (f"line {index} differs at character {at}: recorded "
                    f"{old[max(0, at - 60):at + 60]!r}, now {new[max(0, at - 60):at + 60]!r}")
    return f"{len(expected)} lines recorded, {len(got)} now"


def test_every_page_is_recorded() -> None:
    assert sorted(read_golden("docs")) == sorted(
        f"{p.parent.name}/{p.name}" for p in docs_pages())
    assert sorted(read_golden("trending")) == sorted(
        f"{p.parent.name}/{p.name}" for p, _ in trending_pages())
    assert len(read_golden("docs")) >= 32 and len(read_golden("trending")) >= 7


@pytest.mark.parametrize("path", docs_pages(), ids=lambda p: p.stem)
def test_docs_items_are_byte_identical(path: Path) -> None:
    expected = read_golden("docs")[f"{path.parent.name}/{path.name}"]
    got = docs_lines(path)
    assert got == expected, first_difference(expected, got)


@pytest.mark.parametrize("page", trending_pages(), ids=lambda p: f"{p[0].parent.name}-{p[0].stem}")
def test_trending_items_are_byte_identical(page: tuple[Path, str]) -> None:
    path, url = page
    expected = read_golden("trending")[f"{path.parent.name}/{path.name}"]
    got = trending_lines(path, url)
    assert got == expected, first_difference(expected, got)
