"""A catalog's data tables as two builds must agree on them."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from runner.catalog.schema import TABLES

NUMBERED = ("trending_lists", "trending_page_rows", "trending_fetches")
"""Tables holding the numbers SQLite gave lists and pages: they follow the load order."""


def dump(db: Path) -> dict[str, tuple[int, str]]:
    """Every data table's row count and a digest of its rows in key order: what two builds
    must agree on (streamed: a whole table held here would grow the test's process)."""
    conn = sqlite3.connect(db)
    try:
        tables = {}
        for table in TABLES:
            if not table.data:
                continue
            digest, count = hashlib.sha256(), 0
            for row in conn.execute(f"SELECT * FROM {table.name} "
                                    f"ORDER BY {', '.join(table.key)}"):
                digest.update(repr(row).encode())
                count += 1
            tables[table.name] = (count, digest.hexdigest())
        return tables
    finally:
        conn.close()


def dump_by_content(db: Path) -> dict[str, tuple[int, str]]:
    """:func:`dump` without the tables numbered in load order, and trending pages by count
    (none left over): what builds loading the same files in other orders agree on."""
    tables = dump(db)
    for name in NUMBERED:
        del tables[name]
    tables["trending_pages"] = (tables["trending_pages"][0], "")
    return tables
