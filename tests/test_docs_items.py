"""Docs items stay field-for-field those of the reference code (tests/docs_reference.py): the
per-page cost work (issue 17) may change how a page is processed, never what is collected."""

from __future__ import annotations

import json

import pytest

from tests.docs_reference import PAGES, REFERENCE, SITES, differences, record
from tests.support import Collector


@pytest.mark.timeout(150)
def test_docs_items_and_links_followed_are_the_reference_codes(collector: Collector,
                                                               fake_docs_factory) -> None:
    current = record(collector, fake_docs_factory(sites=SITES, pages=PAGES))
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    assert len(current["items"]) == len(reference["items"]) > SITES * PAGES
    assert differences(reference, current) == []
