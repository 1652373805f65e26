"""Trending snapshots into the catalog: each distinct page once, every fetch a reference.

Trending pages change far less often than they are fetched (GitHub recomputes the lists a few
times a day; the collector reads each every round), so a row per observation grows by 25 rows
per fetch to no purpose: 12 lists once a minute are 158 million rows a year. Here each
distinct page content (its rows) is stored once, in ``trending_pages`` and
``trending_page_rows``, and each fetch is one row of ``trending_fetches`` naming its list, its
time and its page. Why not runs of identical consecutive observations (first and last
``observed_at`` and a count): a run cannot be split where a late file (a recovered ``.part``,
a second process on the same list) or a re-parse of one fetch lands inside it, without the
times of the fetches it folded together; a reference per fetch keeps the history exact (every
fetch, at its time) and every merge order-independent, for about 80 bytes per fetch
(``python -m benchmarks.trending_year``).

``trending_observations`` is a view that gives the rows per fetch as before.

The developer lists (``/trending/developers``) are kept the same way in tables of their own
(``trending_developer_*``), keyed by login; the SQL for both comes from one template
(:func:`merge_sql`), given each kind's :class:`ListTables`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ROW_COLUMNS = ("rank", "full_name", "stars", "forks", "period_stars", "language",
               "description")
LIST_KEY = ("period", "trending_language", "spoken_language_code")


def page_hash(rows: list[tuple[Any, ...]]) -> str:
    """sha256 of a page's rows as the catalog keeps them (``ROW_COLUMNS``, in rank order)."""
    import hashlib  # here: `status` imports this module (the schema's), never hashing

    return hashlib.sha256(json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
                          .encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class ListTables:
    """One kind of trending list in the catalog: its tables, its temporary tables and the
    columns its rows and history have."""

    temp: str  # prefix of its temporary tables
    lists: str
    fetches: str
    pages: str
    page_rows: str
    history: str
    list_key: tuple[str, ...]  # a list's columns, in trending_lists order
    row_columns: tuple[str, ...]  # a page row's columns after page_id, rank first
    name: str  # what a row is about: full_name, login
    kept: str  # the row column the history keeps at entry and exit
    kept_as: tuple[str, str]  # its history columns: at first_seen, at last_seen

    def temp_ddl(self) -> tuple[str, ...]:
        key = ", ".join(self.list_key)
        t = self.temp
        return (
            f"CREATE TEMP TABLE IF NOT EXISTS {t}snap ({key}, observed_at, parsed_at, "
            f"rows_hash, PRIMARY KEY ({key}, observed_at))",
            f"CREATE TEMP TABLE IF NOT EXISTS {t}snaprows (rows_hash, "
            f"{', '.join(self.row_columns)}, PRIMARY KEY (rows_hash, rank))",
            f"CREATE TEMP TABLE IF NOT EXISTS {t}fresh (list_id, observed_at, page_id, "
            "parsed_at, old_page_id, PRIMARY KEY (list_id, observed_at))",
            f"CREATE TEMP TABLE IF NOT EXISTS {t}affected (list_id, {self.name}, "
            f"PRIMARY KEY (list_id, {self.name}))",
        )

    @property
    def insert_snap(self) -> str:
        marks = ", ".join("?" * (len(self.list_key) + 3))
        return (f"INSERT INTO temp.{self.temp}snap VALUES ({marks}) ON CONFLICT DO UPDATE SET "
                "parsed_at = excluded.parsed_at, rows_hash = excluded.rows_hash "
                "WHERE excluded.parsed_at > parsed_at")

    @property
    def insert_snaprows(self) -> str:
        marks = ", ".join("?" * (len(self.row_columns) + 1))
        return f"INSERT OR IGNORE INTO temp.{self.temp}snaprows VALUES ({marks})"


REPOSITORY_LISTS = ListTables(
    temp="", lists="trending_lists", fetches="trending_fetches", pages="trending_pages",
    page_rows="trending_page_rows", history="trending_history", list_key=LIST_KEY,
    row_columns=ROW_COLUMNS, name="full_name", kept="stars",
    kept_as=("stars_first", "stars_last"))
DEVELOPER_ROW_COLUMNS = ("rank", "login", "name", "repo_full_name", "repo_description",
                         "avatar_url")
DEVELOPER_LISTS = ListTables(
    temp="dev", lists="trending_developer_lists", fetches="trending_developer_fetches",
    pages="trending_developer_pages", page_rows="trending_developer_page_rows",
    history="trending_developer_history", list_key=("period", "trending_language"),
    row_columns=DEVELOPER_ROW_COLUMNS, name="login", kept="repo_full_name",
    kept_as=("repo_first", "repo_last"))


def _history_select(k: ListTables, fetches: str, where: str, group_filter: str = "") -> str:
    """History rows aggregated from ``fetches`` (a table with list_id, observed_at, page_id)
    joined with the page rows, ``where`` limiting them."""
    kept_at = (f"(SELECT r2.{k.kept} FROM {{f}} f2 JOIN {k.page_rows} r2 "
               "ON r2.page_id = f2.page_id WHERE f2.list_id = g.list_id AND "
               f"f2.observed_at = g.{{at}} AND r2.{k.name} = g.{k.name} "
               "ORDER BY r2.rank LIMIT 1)")
    keys = ", ".join(f"l.{c}" for c in k.list_key)
    return (
        f"SELECT g.{k.name}, {keys}, g.first_seen, g.last_seen, g.n, g.best, "
        f"{kept_at.format(f=fetches, at='first_seen')}, "
        f"{kept_at.format(f=fetches, at='last_seen')} "
        f"FROM (SELECT f.list_id, r.{k.name}, min(f.observed_at) AS first_seen, "
        f"max(f.observed_at) AS last_seen, count(*) AS n, min(r.rank) AS best "
        f"FROM {fetches} f JOIN {k.page_rows} r ON r.page_id = f.page_id {group_filter} "
        f"WHERE {where} GROUP BY f.list_id, r.{k.name}) g "
        f"JOIN {k.lists} l ON l.list_id = g.list_id WHERE true")


def merge_sql(k: ListTables) -> tuple[str, ...]:
    """One file's snapshots (in the kind's temporary tables) merged into its tables."""
    t = f"temp.{k.temp}"
    key = ", ".join(k.list_key)
    same_list = " AND ".join(f"l.{c} = s.{c}" for c in k.list_key)
    history_key = ", ".join((k.name, *k.list_key))
    history_columns = (f"{history_key}, first_seen, last_seen, observations, best_rank, "
                       f"{k.kept_as[0]}, {k.kept_as[1]}")
    first, last = k.kept_as
    return (
        f"INSERT OR IGNORE INTO {k.lists} ({key}) SELECT DISTINCT {key} FROM {t}snap",
        f"INSERT OR IGNORE INTO {k.pages} (rows_hash) SELECT DISTINCT rows_hash FROM {t}snap",
        f"INSERT OR IGNORE INTO {k.page_rows} SELECT p.page_id, "
        + ", ".join(f"r.{c}" for c in k.row_columns)
        + f" FROM {t}snaprows r JOIN {k.pages} p ON p.rows_hash = r.rows_hash",
        # New fetches, and newer readings (a re-parse) of fetches whose rows they change; a
        # line loaded before, or an older reading, adds nothing.
        f"INSERT INTO {t}fresh SELECT l.list_id, s.observed_at, p.page_id, s.parsed_at, "
        f"f.page_id FROM {t}snap s JOIN {k.lists} l ON {same_list} "
        f"JOIN {k.pages} p ON p.rows_hash = s.rows_hash "
        f"LEFT JOIN {k.fetches} f ON f.list_id = l.list_id AND f.observed_at = s.observed_at "
        "WHERE f.list_id IS NULL OR (s.parsed_at > coalesce(f.parsed_at, f.observed_at) "
        "AND p.page_id != f.page_id)",
        f"INSERT INTO {k.fetches} SELECT observed_at, list_id, page_id, "
        f"nullif(parsed_at, observed_at) FROM {t}fresh WHERE true "
        "ON CONFLICT (observed_at, list_id) DO UPDATE SET "
        "page_id = excluded.page_id, parsed_at = excluded.parsed_at",
        # History: new fetches folded into each row's history.
        f"INSERT INTO {k.history} ({history_columns}) "
        + _history_select(k, f"{t}fresh", "f.old_page_id IS NULL")
        + f" ON CONFLICT ({history_key}) DO UPDATE SET "
        f"{first} = iif(excluded.first_seen < first_seen, excluded.{first}, {first}), "
        "first_seen = min(first_seen, excluded.first_seen), "
        f"{last} = iif(excluded.last_seen > last_seen, excluded.{last}, {last}), "
        "last_seen = max(last_seen, excluded.last_seen), "
        "observations = observations + excluded.observations, "
        "best_rank = min(best_rank, excluded.best_rank)",
        # Re-read fetches: every row on the old or the new reading has its history
        # recomputed from all its fetches on that list.
        f"INSERT OR IGNORE INTO {t}affected SELECT fr.list_id, r.{k.name} FROM {t}fresh fr "
        f"JOIN {k.page_rows} r ON r.page_id IN (fr.page_id, fr.old_page_id) "
        "WHERE fr.old_page_id IS NOT NULL",
        # By the history's key (a correlated EXISTS read every history row at every file).
        f"DELETE FROM {k.history} WHERE ({history_key}) IN (SELECT a.{k.name}, "
        + ", ".join(f"l.{c}" for c in k.list_key)
        + f" FROM {t}affected a JOIN {k.lists} l ON l.list_id = a.list_id)",
        f"INSERT INTO {k.history} ({history_columns}) "
        + _history_select(k, k.fetches, "true",
                          f"JOIN {t}affected a ON a.list_id = f.list_id "
                          f"AND a.{k.name} = r.{k.name}"),
        # A page no fetch shows any more (the broken reading a re-parse replaced) is forgotten.
        f"DELETE FROM {k.page_rows} WHERE page_id IN (SELECT old_page_id FROM {t}fresh "
        f"WHERE old_page_id IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM {k.fetches} f "
        f"WHERE f.page_id = {k.page_rows}.page_id)",
        f"DELETE FROM {k.pages} WHERE page_id IN (SELECT old_page_id FROM {t}fresh "
        f"WHERE old_page_id IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM {k.fetches} f "
        f"WHERE f.page_id = {k.pages}.page_id)",
        f"DELETE FROM {t}snap",
        f"DELETE FROM {t}snaprows",
        f"DELETE FROM {t}fresh",
        f"DELETE FROM {t}affected",
    )


KINDS = (REPOSITORY_LISTS, DEVELOPER_LISTS)
TEMP_DDL = tuple(statement for kind in KINDS for statement in kind.temp_ddl())
MERGE_SQL = tuple(statement for kind in KINDS for statement in merge_sql(kind))
