"""A docs page's fidelity record as the item holds it (issue 37: built without asdict's copy)."""

from __future__ import annotations

from dataclasses import asdict, fields

from scraper.docpages.fidelityrecord import FIELDS, Fidelity


def test_the_items_fields_are_the_records_in_its_order() -> None:
    record = Fidelity(*range(1, len(FIELDS) + 1))
    assert tuple(field.name for field in fields(Fidelity)) == FIELDS
    assert list(record.fields().items()) == list(asdict(record).items())
    assert record.fields() == {"code_blocks": 1, "code_blocks_exact": 2, "tabs": 3,
                               "tabs_labelled": 4, "tables": 5, "tables_kept": 6,
                               "callouts": 7, "callouts_kept": 8}
