"""The catalog's tables: their SQL, and what every column means (README and viewer read this).

The data tables are a function of the item files alone, so a kill mid-build followed by a
re-run gives the same tables as one clean build. The bookkeeping tables (``loaded_files`` and
the ``*_samples`` taken at each build) are not part of that promise.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from runner.catalog.migrate import add_columns, migrate


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    title: str
    columns: tuple[tuple[str, str, str], ...]  # (name, SQL type, meaning)
    key: tuple[str, ...]
    data: bool = True  # False: bookkeeping, not compared between builds
    rowid: bool = False  # the key is an INTEGER PRIMARY KEY numbered by SQLite
    unique: tuple[str, ...] = ()  # a natural key beside the numbered one
    view: str | None = None  # a view: this SELECT, not a table

    def ddl(self) -> str:
        if self.view is not None:
            return f"CREATE VIEW IF NOT EXISTS {self.name} AS {self.view};"
        if self.rowid:
            first, *rest = self.columns
            cols = ",\n  ".join([f"{first[0]} INTEGER PRIMARY KEY"]
                                + [f"{name} {kind}" for name, kind, _ in rest])
            return (f"CREATE TABLE IF NOT EXISTS {self.name} (\n  {cols},\n"
                    f"  UNIQUE ({', '.join(self.unique)})\n);")
        cols = ",\n  ".join(f"{name} {kind}" for name, kind, _ in self.columns)
        return (f"CREATE TABLE IF NOT EXISTS {self.name} (\n  {cols},\n"
                f"  PRIMARY KEY ({', '.join(self.key)})\n) WITHOUT ROWID;")

    @property
    def column_names(self) -> list[str]:
        return [name for name, _, _ in self.columns]


_PAGE_ROW = (
    ("rank", "INTEGER NOT NULL", "position on the page, from 1"),
    ("full_name", "TEXT NOT NULL", "owner/name"),
    ("stars", "INTEGER", "stars shown on the page"),
    ("forks", "INTEGER", "forks shown on the page"),
    ("period_stars", "INTEGER", "stars gained in the period, as the page says"),
    ("language", "TEXT", "the repository's main language, as the page says"),
    ("description", "TEXT", "the repository's description"),
)
"""A trending page's row, as a distinct page stores it and the observations view shows it."""
_DEVELOPER_ROW = (
    ("rank", "INTEGER NOT NULL", "position on the page, from 1"),
    ("login", "TEXT NOT NULL", "the developer's GitHub login"),
    ("name", "TEXT", "the display name, as the page says; null when it shows only the login"),
    ("repo_full_name", "TEXT", "the popular repository shown (owner/name); null when none"),
    ("repo_description", "TEXT", "its description, as the page shows it"),
    ("avatar_url", "TEXT", "the avatar image the page shows"),
)
"""A trending developers page's row."""
_LIST = (
    ("period", "TEXT NOT NULL", "daily, weekly or monthly"),
    ("trending_language", "TEXT NOT NULL", "the list's language slug; '' for all languages"),
)

TABLES: tuple[Table, ...] = (
    Table("trending_lists", "The trending lists observed", (
        ("list_id", "INTEGER NOT NULL", "the list's number in this catalog"),
        *_LIST,
        ("spoken_language_code", "TEXT NOT NULL",
         "the list's spoken language (GitHub's spoken_language_code); '' for any"),
    ), key=("list_id",), rowid=True, unique=("period", "trending_language",
                                              "spoken_language_code")),
    Table("trending_fetches", "Every fetch of a trending list: when, and which page it showed", (
        ("observed_at", "TEXT NOT NULL",
         "when the page was fetched, ISO-8601 UTC with milliseconds"),
        ("list_id", "INTEGER NOT NULL", "trending_lists.list_id"),
        ("page_id", "INTEGER NOT NULL", "trending_pages.page_id: the rows it showed"),
        ("parsed_at", "TEXT",
         "when its rows were read, if not when fetched: the time of a re-parse (python -m "
         "runner reparse), whose reading supersedes an earlier one; null = when fetched"),
    ), key=("observed_at", "list_id")),
    Table("trending_pages", "Each distinct content a trending page has shown", (
        ("page_id", "INTEGER NOT NULL", "the page content's number in this catalog"),
        ("rows_hash", "TEXT NOT NULL", "sha256 of its rows: identical pages are stored once"),
    ), key=("page_id",), rowid=True, unique=("rows_hash",)),
    Table("trending_page_rows", "The rows of each distinct trending page", (
        ("page_id", "INTEGER NOT NULL", "trending_pages.page_id"),
        *_PAGE_ROW,
    ), key=("page_id", "rank")),
    Table("trending_observations", "Every row of every trending page fetched (a view over "
          "trending_fetches and trending_page_rows)", (
        ("observed_at", "TEXT NOT NULL",
         "when the page was fetched, ISO-8601 UTC with milliseconds; the same for every row of "
         "one page"),
        *_LIST,
        ("spoken_language_code", "TEXT NOT NULL", "the list's spoken language; '' for any"),
        *_PAGE_ROW,
    ), key=("period", "trending_language", "spoken_language_code", "observed_at", "rank"),
          view="SELECT f.observed_at, l.period, l.trending_language, l.spoken_language_code, "
               "r.rank, r.full_name, r.stars, r.forks, r.period_stars, r.language, "
               "r.description FROM trending_fetches f JOIN trending_lists l USING (list_id) "
               "JOIN trending_page_rows r USING (page_id)"),
    Table("trending_history", "Each repository's time on each trending list", (
        ("full_name", "TEXT NOT NULL", "owner/name"),
        ("period", "TEXT NOT NULL", "daily, weekly or monthly"),
        ("trending_language", "TEXT NOT NULL", "'' for all languages"),
        ("spoken_language_code", "TEXT NOT NULL", "'' for any spoken language"),
        ("first_seen", "TEXT NOT NULL", "observed_at of its first observation on this list"),
        ("last_seen", "TEXT NOT NULL", "observed_at of its last observation on this list"),
        ("observations", "INTEGER NOT NULL", "how many fetched pages of this list showed it"),
        ("best_rank", "INTEGER NOT NULL", "its best (lowest) rank on this list"),
        ("stars_first", "INTEGER", "stars at first_seen"),
        ("stars_last", "INTEGER", "stars at last_seen"),
    ), key=("full_name", "period", "trending_language", "spoken_language_code")),
    Table("trending_developer_lists", "The trending developer lists observed", (
        ("list_id", "INTEGER NOT NULL", "the list's number in this catalog"),
        *_LIST,
    ), key=("list_id",), rowid=True, unique=("period", "trending_language")),
    Table("trending_developer_fetches", "Every fetch of a trending developer list: when, and "
          "which page it showed", (
        ("observed_at", "TEXT NOT NULL",
         "when the page was fetched, ISO-8601 UTC with milliseconds"),
        ("list_id", "INTEGER NOT NULL", "trending_developer_lists.list_id"),
        ("page_id", "INTEGER NOT NULL", "trending_developer_pages.page_id: the rows it showed"),
        ("parsed_at", "TEXT", "when its rows were read, if not when fetched (a re-parse); "
                              "null = when fetched"),
    ), key=("observed_at", "list_id")),
    Table("trending_developer_pages", "Each distinct content a trending developers page has "
          "shown", (
        ("page_id", "INTEGER NOT NULL", "the page content's number in this catalog"),
        ("rows_hash", "TEXT NOT NULL", "sha256 of its rows: identical pages are stored once"),
    ), key=("page_id",), rowid=True, unique=("rows_hash",)),
    Table("trending_developer_page_rows", "The rows of each distinct trending developers page", (
        ("page_id", "INTEGER NOT NULL", "trending_developer_pages.page_id"),
        *_DEVELOPER_ROW,
    ), key=("page_id", "rank")),
    Table("trending_developer_observations", "Every row of every trending developers page "
          "fetched (a view over trending_developer_fetches and trending_developer_page_rows)", (
        ("observed_at", "TEXT NOT NULL",
         "when the page was fetched, ISO-8601 UTC with milliseconds"),
        *_LIST,
        *_DEVELOPER_ROW,
    ), key=("period", "trending_language", "observed_at", "rank"),
          view="SELECT f.observed_at, l.period, l.trending_language, r.rank, r.login, r.name, "
               "r.repo_full_name, r.repo_description, r.avatar_url "
               "FROM trending_developer_fetches f JOIN trending_developer_lists l "
               "USING (list_id) JOIN trending_developer_page_rows r USING (page_id)"),
    Table("trending_developer_history", "Each developer's time on each trending developer "
          "list", (
        ("login", "TEXT NOT NULL", "the developer's GitHub login"),
        ("period", "TEXT NOT NULL", "daily, weekly or monthly"),
        ("trending_language", "TEXT NOT NULL", "'' for all languages"),
        ("first_seen", "TEXT NOT NULL", "observed_at of its first observation on this list"),
        ("last_seen", "TEXT NOT NULL", "observed_at of its last observation on this list"),
        ("observations", "INTEGER NOT NULL", "how many fetched pages of this list showed it"),
        ("best_rank", "INTEGER NOT NULL", "its best (lowest) rank on this list"),
        ("repo_first", "TEXT", "the popular repository shown at first_seen (owner/name)"),
        ("repo_last", "TEXT", "the popular repository shown at last_seen"),
    ), key=("login", "period", "trending_language")),
    Table("repos", "Latest search result per repository", (
        ("id", "INTEGER NOT NULL", "GitHub's repository id"),
        ("full_name", "TEXT", "owner/name (latest)"),
        ("description", "TEXT", "latest description"),
        ("language", "TEXT", "latest main language"),
        ("stargazers_count", "INTEGER", "latest star count"),
        ("forks_count", "INTEGER", "latest fork count"),
        ("topics", "TEXT", "latest topics, a JSON list"),
        ("license", "TEXT", "latest license, SPDX id"),
        ("created_at", "TEXT", "when the repository was created (GitHub)"),
        ("pushed_at", "TEXT", "last push, as of the latest result (GitHub)"),
        ("archived", "INTEGER", "1 if archived, as of the latest result"),
        ("first_seen", "TEXT NOT NULL", "collected_at of the first search item for it"),
        ("last_seen", "TEXT NOT NULL",
         "collected_at of the latest search item for it (an unchanged repository is not "
         "collected again: content dedup)"),
    ), key=("id",)),
    # Keyed by time: a build appends to it (by repository, any hour of results touched every
    # page of it); repo_stars_by_id finds one repository's counts.
    Table("repo_stars", "Star counts of searched repositories over time", (
        ("id", "INTEGER NOT NULL", "GitHub's repository id"),
        ("observed_at", "TEXT NOT NULL", "collected_at of the search item"),
        ("stargazers_count", "INTEGER", "stars then"),
    ), key=("observed_at", "id")),
    Table("docs_pages", "Documentation pages and their changes", (
        ("url", "TEXT NOT NULL", "the page"),
        ("title", "TEXT", "its current title"),
        ("content_hash", "TEXT NOT NULL",
         "the current content's content_hash (sha256 of the docs item's content fields)"),
        ("first_seen", "TEXT NOT NULL", "when it was first collected"),
        ("last_changed", "TEXT NOT NULL", "when its current content was first collected"),
        ("versions", "INTEGER NOT NULL", "how many different contents it has had"),
    ), key=("url",)),
    Table("docs_versions", "Every content a documentation page has had", (
        ("url", "TEXT NOT NULL", "the page"),
        ("content_hash", "TEXT NOT NULL", "the docs item's content_hash"),
        ("first_seen", "TEXT NOT NULL", "when this content was first collected"),
        ("title", "TEXT", "the title with this content"),
    ), key=("url", "content_hash")),
    Table("docs_contents", "What each content of a documentation page says", (
        ("url", "TEXT NOT NULL", "the page"),
        ("content_hash", "TEXT NOT NULL", "the docs item's content_hash"),
        ("title", "TEXT", "its title"),
        ("markdown", "TEXT", "its main content as GitHub-flavoured Markdown"),
        ("code_blocks", "INTEGER", "code blocks in the content (NULL: collected before the "
                                   "converter counted them)"),
        ("code_blocks_exact", "INTEGER", "of them, byte-exact in markdown"),
        ("version", "TEXT", "the version the page documents (its URL's or its version "
                            "switcher's), NULL if it names none"),
        # Added later: at the end, where ALTER TABLE puts them in an older catalog.
        ("tabs", "INTEGER", "tab panels in the content (NULL: collected before they were "
                            "counted)"),
        ("tabs_labelled", "INTEGER", "of them, under their tab's label in markdown"),
        ("tables", "INTEGER", "tables in the content (NULL: collected before they were "
                              "counted)"),
        ("tables_kept", "INTEGER", "of them, every cell under its column's header in markdown "
                                   "(merged cells spread or listed, not shifted)"),
        ("callouts", "INTEGER", "callouts (notes, tips, warnings) in the content (NULL: "
                                "collected before they were counted)"),
        ("callouts_kept", "INTEGER", "of them, a quote under their title in markdown"),
    ), key=("url", "content_hash")),
    Table("items_per_hour", "Items collected per hour and spider", (
        ("spider", "TEXT NOT NULL", "trending, search or docs"),
        ("hour", "TEXT NOT NULL", "the hour of collected_at, 'YYYY-MM-DDTHH:00Z'"),
        ("items", "INTEGER NOT NULL", "item lines (page snapshots not counted)"),
        ("bytes", "INTEGER NOT NULL", "their size in the item files"),
    ), key=("spider", "hour")),
    Table("fetch_ledger", "Every scheduled fetch of every round and its outcome (the gap "
          "ledger)", (
        ("spider", "TEXT NOT NULL", "trending, search or docs"),
        ("shard", "TEXT NOT NULL", "the worker's shard, i/N"),
        ("round", "TEXT NOT NULL", "when the round started, ISO-8601 UTC with milliseconds"),
        ("kind", "TEXT NOT NULL", "list (trending), query (search) or site (docs)"),
        ("key", "TEXT NOT NULL", "the trending list (period|language|spoken), the search "
                                 "query or the docs start URL"),
        ("outcome", "TEXT NOT NULL", "data, not_modified (304), failed, skipped, or silent "
                                     "(the worker ended without recording it)"),
        ("cause", "TEXT NOT NULL", "why it yielded nothing: HTTP status, refused, timeout, "
                                   "dns, robots, budget, disk full, round cut short; '' else"),
        ("detail", "TEXT NOT NULL", "the failure's own words, or what closed the round"),
        ("at", "TEXT NOT NULL", "when the outcome was recorded (the round's start if silent)"),
    ), key=("spider", "shard", "round", "key")),
    Table("loaded_files", "Item files already in the catalog", (
        ("path", "TEXT NOT NULL", "relative to data_dir/items (an open segment: its .part "
                                  "name, until it closes)"),
        ("size", "INTEGER NOT NULL", "bytes when loaded (an open segment: the byte after its "
                                     "last line loaded)"),
        ("lines", "INTEGER NOT NULL", "lines read"),
        ("bad_lines", "INTEGER NOT NULL", "lines skipped (reported when loaded)"),
        ("loaded_at", "TEXT NOT NULL", "when this build loaded it"),
    ), key=("path",), data=False),
    Table("size_samples", "The data directory's size at each catalog build", (
        ("measured_at", "TEXT NOT NULL", "when"),
        ("data_bytes", "INTEGER NOT NULL", "data_dir size on disk"),
    ), key=("measured_at",), data=False),
    Table("budget_samples", "The GitHub budget at each catalog build", (
        ("measured_at", "TEXT NOT NULL", "when"),
        ("resource", "TEXT NOT NULL", "core or search"),
        ("identity", "TEXT NOT NULL", "'anonymous' or 'token …ab12'"),
        ("limit_n", "INTEGER", "requests per window"),
        ("remaining", "INTEGER", "requests left in the window"),
    ), key=("measured_at", "resource", "identity"), data=False),
    Table("docs_feed_entries", "The entries each docs feed shows, as last written", (
        ("site", "TEXT NOT NULL", "the feed's site prefix"),
        ("url", "TEXT NOT NULL", "the page"),
        ("content_hash", "TEXT NOT NULL", "the new content"),
        ("first_seen", "TEXT NOT NULL", "when that content was first collected"),
        ("title", "TEXT", "the page's title with it"),
        ("summary", "TEXT NOT NULL", "lines added and removed"),
        ("diff", "TEXT NOT NULL", "the unified diff the entry shows"),
    ), key=("site", "url", "content_hash"), data=False),
    Table("docs_feed_pending", "Docs contents loaded since the feeds were written", (
        ("url", "TEXT NOT NULL", "the page"),
        ("content_hash", "TEXT NOT NULL", "the content"),
    ), key=("url", "content_hash"), data=False),
    Table("docs_feed_state", "What the docs feeds were last written from", (
        ("sites", "TEXT NOT NULL", "the configured site prefixes, one a line"),
    ), key=("sites",), data=False),
)
TABLE_BY_NAME = {table.name: table for table in TABLES}
DATA_TABLES = tuple(table.name for table in TABLES if table.data)

INDEXES = (
    "CREATE INDEX IF NOT EXISTS fetches_by_page ON trending_fetches (page_id)",
    "CREATE INDEX IF NOT EXISTS page_rows_by_name ON trending_page_rows (full_name)",
    "CREATE INDEX IF NOT EXISTS history_by_first_seen ON trending_history "
    "(period, trending_language, spoken_language_code, first_seen)",
    "CREATE INDEX IF NOT EXISTS developer_fetches_by_page ON trending_developer_fetches "
    "(page_id)",
    "CREATE INDEX IF NOT EXISTS developer_rows_by_login ON trending_developer_page_rows (login)",
    "CREATE INDEX IF NOT EXISTS developer_history_by_first_seen ON trending_developer_history "
    "(period, trending_language, first_seen)",
    "CREATE INDEX IF NOT EXISTS repo_stars_by_id ON repo_stars (id, observed_at)",
)
SCHEMA_VERSION = 3
"""``PRAGMA user_version``: 2 keeps each distinct trending page once (trending_pages) and
every fetch as a reference to it; 0/1 held a row per observation, migrated at the first
connect (:mod:`runner.catalog.migrate`); 3 keys ``repo_stars`` by time."""


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """The catalog, in WAL mode (readers see the last finished file while a build runs)."""
    if readonly:
        return sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=30)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    # NORMAL in WAL mode: a killed process loses no committed transaction (only power loss
    # could), at a fraction of FULL's fsyncs.
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA cache_size=-16000")  # 16 MB: bounded memory on a 2 GB box
    conn.execute("PRAGMA temp_store=FILE")
    migrate(conn, SCHEMA_VERSION, TABLE_BY_NAME)
    for table in TABLES:
        conn.execute(table.ddl())
        if table.view is None:
            add_columns(conn, table.name, table.columns)
    for index in INDEXES:
        conn.execute(index)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    return conn
