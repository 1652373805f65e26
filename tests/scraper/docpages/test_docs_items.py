"""Docs items stay field-for-field those of the reference code (tests/support/docs_reference.py):
the
per-page cost work (issue 17) may change how a page is processed, never what is collected."""

from __future__ import annotations

import json

import pytest

from tests.support.collector import Collector
from tests.support.docs_reference import PAGES, REFERENCE, SITES, differences, record


@pytest.mark.timeout(150)
def test_docs_items_and_links_followed_are_the_reference_codes(collector: Collector,
                                                               fake_docs_factory) -> None:
    current = record(collector, fake_docs_factory(sites=SITES, pages=PAGES))
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    assert len(current["items"]) == len(reference["items"]) > SITES * PAGES
    assert differences(reference, current) == []


def test_item_lines_are_what_itemadapter_asdict_gives() -> None:
    """The item store's shortcut writes the same bytes as json.dumps(ItemAdapter(…).asdict()),
    nested items (in lists, in dicts, dataclasses) included; what json cannot write still fails."""
    import dataclasses

    from itemadapter import ItemAdapter

    from pipelines.itemstore import json_line
    from scraper.items import DocPageItem

    @dataclasses.dataclass
    class Part:
        name: str
        tags: tuple[str, ...]

    inner = DocPageItem(url="u", headings=["a", "ü"])
    item = DocPageItem(url="http://docs.test/é", title=None, headings=["x", "y"], text="t\n\"q\"",
                       markdown="`m` <b>", canonical_url=None, lang="en",
                       last_modified=[inner, {"k": Part("p", ("a", "b")), 1: 2.5}])
    for value in (item, {"plain": [inner, Part("q", ())], "n": None}, Part("r", ("z",))):
        expected = json.dumps(ItemAdapter(value).asdict(), ensure_ascii=False) + "\n"
        assert json_line(value) == expected.encode()
    with pytest.raises(TypeError):
        json_line({"bad": {1, 2}})
