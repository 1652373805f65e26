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
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

ROW_COLUMNS = ("rank", "full_name", "stars", "forks", "period_stars", "language",
               "description")
LIST_KEY = ("period", "trending_language", "spoken_language_code")


def page_hash(rows: list[tuple[Any, ...]]) -> str:
    """sha256 of a page's rows as the catalog keeps them (``ROW_COLUMNS``, in rank order)."""
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
                          .encode()).hexdigest()


TEMP_DDL = (
    "CREATE TEMP TABLE IF NOT EXISTS snap (period, trending_language, spoken_language_code, "
    "observed_at, parsed_at, rows_hash, PRIMARY KEY (period, trending_language, "
    "spoken_language_code, observed_at))",
    "CREATE TEMP TABLE IF NOT EXISTS snaprows (rows_hash, rank, full_name, stars, forks, "
    "period_stars, language, description, PRIMARY KEY (rows_hash, rank))",
    "CREATE TEMP TABLE IF NOT EXISTS fresh (list_id, observed_at, page_id, parsed_at, "
    "old_page_id, PRIMARY KEY (list_id, observed_at))",
    "CREATE TEMP TABLE IF NOT EXISTS affected (list_id, full_name, "
    "PRIMARY KEY (list_id, full_name))",
)

INSERT_SNAP = (
    "INSERT INTO temp.snap VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
    "parsed_at = excluded.parsed_at, rows_hash = excluded.rows_hash "
    "WHERE excluded.parsed_at > parsed_at")
INSERT_SNAPROWS = "INSERT OR IGNORE INTO temp.snaprows VALUES (?, ?, ?, ?, ?, ?, ?, ?)"

_LIST_OF = "JOIN trending_lists l ON l.list_id = {0}.list_id"
_HISTORY_COLUMNS = ("full_name, period, trending_language, spoken_language_code, first_seen, "
                    "last_seen, observations, best_rank, stars_first, stars_last")


def _history_select(fetches: str, where: str, group_filter: str = "") -> str:
    """History rows aggregated from ``fetches`` (a table with list_id, observed_at, page_id)
    joined with the page rows, ``where`` limiting them."""
    stars_at = ("(SELECT r2.stars FROM {f} f2 JOIN trending_page_rows r2 "
                "ON r2.page_id = f2.page_id WHERE f2.list_id = g.list_id AND "
                "f2.observed_at = g.{at} AND r2.full_name = g.full_name "
                "ORDER BY r2.rank LIMIT 1)")
    return (
        f"SELECT g.full_name, l.period, l.trending_language, l.spoken_language_code, "
        f"g.first_seen, g.last_seen, g.n, g.best, "
        f"{stars_at.format(f=fetches, at='first_seen')}, "
        f"{stars_at.format(f=fetches, at='last_seen')} "
        f"FROM (SELECT f.list_id, r.full_name, min(f.observed_at) AS first_seen, "
        f"max(f.observed_at) AS last_seen, count(*) AS n, min(r.rank) AS best "
        f"FROM {fetches} f JOIN trending_page_rows r ON r.page_id = f.page_id {group_filter} "
        f"WHERE {where} GROUP BY f.list_id, r.full_name) g "
        f"{_LIST_OF.format('g')} WHERE true")


MERGE_SQL = (
    "INSERT OR IGNORE INTO trending_lists (period, trending_language, spoken_language_code) "
    "SELECT DISTINCT period, trending_language, spoken_language_code FROM temp.snap",
    "INSERT OR IGNORE INTO trending_pages (rows_hash) SELECT DISTINCT rows_hash FROM temp.snap",
    "INSERT OR IGNORE INTO trending_page_rows SELECT p.page_id, r.rank, r.full_name, r.stars, "
    "r.forks, r.period_stars, r.language, r.description FROM temp.snaprows r "
    "JOIN trending_pages p ON p.rows_hash = r.rows_hash",
    # New fetches, and newer readings (a re-parse) of fetches whose rows they change; a
    # line loaded before, or an older reading, adds nothing.
    "INSERT INTO temp.fresh SELECT l.list_id, s.observed_at, p.page_id, s.parsed_at, "
    "f.page_id FROM temp.snap s JOIN trending_lists l ON l.period = s.period "
    "AND l.trending_language = s.trending_language "
    "AND l.spoken_language_code = s.spoken_language_code "
    "JOIN trending_pages p ON p.rows_hash = s.rows_hash "
    "LEFT JOIN trending_fetches f ON f.list_id = l.list_id AND f.observed_at = s.observed_at "
    "WHERE f.list_id IS NULL OR (s.parsed_at > coalesce(f.parsed_at, f.observed_at) "
    "AND p.page_id != f.page_id)",
    "INSERT INTO trending_fetches SELECT observed_at, list_id, page_id, "
    "nullif(parsed_at, observed_at) FROM temp.fresh WHERE true "
    "ON CONFLICT (observed_at, list_id) DO UPDATE SET "
    "page_id = excluded.page_id, parsed_at = excluded.parsed_at",
    # History: new fetches folded into each repository's row.
    f"INSERT INTO trending_history ({_HISTORY_COLUMNS}) "
    + _history_select("temp.fresh", "f.old_page_id IS NULL")
    + " ON CONFLICT (full_name, period, trending_language, spoken_language_code) "
    "DO UPDATE SET "
    "stars_first = iif(excluded.first_seen < first_seen, excluded.stars_first, stars_first), "
    "first_seen = min(first_seen, excluded.first_seen), "
    "stars_last = iif(excluded.last_seen > last_seen, excluded.stars_last, stars_last), "
    "last_seen = max(last_seen, excluded.last_seen), "
    "observations = observations + excluded.observations, "
    "best_rank = min(best_rank, excluded.best_rank)",
    # Re-read fetches: every repository on the old or the new reading has its history
    # recomputed from all its fetches on that list.
    "INSERT OR IGNORE INTO temp.affected SELECT fr.list_id, r.full_name FROM temp.fresh fr "
    "JOIN trending_page_rows r ON r.page_id IN (fr.page_id, fr.old_page_id) "
    "WHERE fr.old_page_id IS NOT NULL",
    # By the history's key (a correlated EXISTS read every history row at every file).
    "DELETE FROM trending_history WHERE (full_name, period, trending_language, "
    "spoken_language_code) IN (SELECT a.full_name, l.period, l.trending_language, "
    f"l.spoken_language_code FROM temp.affected a {_LIST_OF.format('a')})",
    f"INSERT INTO trending_history ({_HISTORY_COLUMNS}) "
    + _history_select("trending_fetches", "true",
                      "JOIN temp.affected a ON a.list_id = f.list_id "
                      "AND a.full_name = r.full_name"),
    # A page no fetch shows any more (the broken reading a re-parse replaced) is forgotten.
    "DELETE FROM trending_page_rows WHERE page_id IN (SELECT old_page_id FROM temp.fresh "
    "WHERE old_page_id IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM trending_fetches f "
    "WHERE f.page_id = trending_page_rows.page_id)",
    "DELETE FROM trending_pages WHERE page_id IN (SELECT old_page_id FROM temp.fresh "
    "WHERE old_page_id IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM trending_fetches f "
    "WHERE f.page_id = trending_pages.page_id)",
    "DELETE FROM temp.snap",
    "DELETE FROM temp.snaprows",
    "DELETE FROM temp.fresh",
    "DELETE FROM temp.affected",
)
