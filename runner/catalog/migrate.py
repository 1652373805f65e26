"""Catalogs of earlier versions brought to the current schema, once, in one transaction.

Version 0/1 (``PRAGMA user_version`` 0) kept ``trending_observations`` as a table, a row per
observation, and a ``trending_history`` keyed without the spoken language. Version 2 keeps each
distinct page once (:mod:`runner.catalog.trendingsnapshots`): the observations are regrouped
into their fetches and pages, the history gets ``spoken_language_code`` '' (those lists were for any
spoken language), and the old table is dropped. A kill mid-way leaves the old catalog as it
was (one transaction); the next connect migrates it again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from itertools import groupby
from typing import Protocol

from runner.catalog.trendingsnapshots import page_hash


class TableLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def key(self) -> tuple[str, ...]: ...

    @property
    def view(self) -> str | None: ...

    def ddl(self) -> str: ...

    @property
    def column_names(self) -> list[str]: ...


_OLD_ORDER = "ORDER BY period, trending_language, observed_at, rank"


def add_columns(conn: sqlite3.Connection, table: str,
                columns: tuple[tuple[str, str, str], ...]) -> None:
    """Columns a table gained since the catalog was made, added at its end (NULL in the rows it
    has): a catalog built before docs_contents counted tabs, tables and callouts takes the new
    counts without a rebuild."""
    have = {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
    for name, kind, _ in columns:
        if name not in have:
            conn.execute(f'ALTER TABLE "{table}" ADD COLUMN {name} {kind}')


def migrate(conn: sqlite3.Connection, schema_version: int,
            tables: Mapping[str, TableLike]) -> None:
    """Bring ``conn``'s catalog to ``schema_version`` (whose tables are ``tables``, by name); a
    new or current one is left alone. The schema module passes both in, so this module needs
    no import of it."""
    if conn.execute("PRAGMA user_version").fetchone()[0] >= schema_version:
        return
    kinds = dict(conn.execute("SELECT name, type FROM sqlite_master"))
    if kinds.get("trending_observations") == "table":
        _distinct_pages(conn, kinds, tables)
    for table in tables.values():
        if table.view is None and kinds.get(table.name) == "table":
            rekey(conn, table)


def rekey(conn: sqlite3.Connection, table: TableLike) -> None:
    """A table whose primary key is not (any more) ``table.key``, made again with it, its rows
    copied in the new key's order, in one transaction (version 3 keys ``repo_stars`` by time,
    so that a build appends to it)."""
    have = sorted((pk, name) for _, name, _, _, _, pk in
                  conn.execute(f'PRAGMA table_info("{table.name}")') if pk)
    if tuple(name for _, name in have) == table.key:
        return
    columns = ", ".join(table.column_names)
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(f'ALTER TABLE "{table.name}" RENAME TO "{table.name}_rekeyed"')
        conn.execute(table.ddl())
        conn.execute(f'INSERT INTO "{table.name}" ({columns}) SELECT {columns} FROM '
                     f'"{table.name}_rekeyed" ORDER BY {", ".join(table.key)}')
        conn.execute(f'DROP TABLE "{table.name}_rekeyed"')
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _distinct_pages(conn: sqlite3.Connection, kinds: dict[str, str],
                    tables: Mapping[str, TableLike]) -> None:
    """Version 0/1's observations table as distinct pages and their fetches."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for name in ("trending_lists", "trending_fetches", "trending_pages",
                     "trending_page_rows"):
            conn.execute(tables[name].ddl())
        _regroup_observations(conn)
        conn.execute("DROP INDEX IF EXISTS observations_by_time")
        conn.execute("DROP TABLE trending_observations")
        if "trending_history" in kinds:
            conn.execute("ALTER TABLE trending_history RENAME TO trending_history_v1")
            conn.execute("DROP INDEX IF EXISTS history_by_first_seen")
            conn.execute(tables["trending_history"].ddl())
            conn.execute(
                "INSERT INTO trending_history SELECT full_name, period, trending_language, '', "
                "first_seen, last_seen, observations, best_rank, stars_first, stars_last "
                "FROM trending_history_v1")
            conn.execute("DROP TABLE trending_history_v1")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _regroup_observations(conn: sqlite3.Connection) -> None:
    """Old rows, streamed in page order, as fetches of distinct pages."""
    rows = conn.execute(
        "SELECT period, trending_language, observed_at, rank, full_name, stars, forks, "
        f"period_stars, language, description FROM trending_observations {_OLD_ORDER}")
    writer = conn.cursor()
    for (period, language, observed_at), group in groupby(rows, key=lambda r: r[:3]):
        page = [tuple(r[3:]) for r in group]
        digest = page_hash(page)
        writer.execute("INSERT OR IGNORE INTO trending_lists (period, trending_language, "
                       "spoken_language_code) VALUES (?, ?, '')", (period, language))
        (list_id,) = writer.execute(
            "SELECT list_id FROM trending_lists WHERE period = ? AND trending_language = ? "
            "AND spoken_language_code = ''", (period, language)).fetchone()
        inserted = writer.execute("INSERT OR IGNORE INTO trending_pages (rows_hash) VALUES (?)",
                                  (digest,)).rowcount
        (page_id,) = writer.execute("SELECT page_id FROM trending_pages WHERE rows_hash = ?",
                                    (digest,)).fetchone()
        if inserted:
            writer.executemany("INSERT INTO trending_page_rows VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                               [(page_id, *row) for row in page])
        writer.execute("INSERT OR IGNORE INTO trending_fetches VALUES (?, ?, ?, NULL)",
                       (observed_at, list_id, page_id))
