"""``python -m runner history owner/name [--json]``: when was it trending, from the catalog.

One line per list it appeared on (period, language, spoken language): first and last seen, the
days it was seen there (UTC dates), best rank, stars at entry and at exit. A name never seen is
one line on stderr and exit 1, so a script can ask ``history x/y && …``.

A login (no ``/``) is a developer: ``history torvalds`` answers from the developer lists
(``/trending/developers``), with the popular repository shown at entry and at exit instead of
stars, and says it is a developer.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from collections.abc import Callable
from typing import Any

from runner.catalog.queries import WHEN_DEVELOPER_TRENDING, WHEN_TRENDING
from runner.core.usage import PROG as RUNNER
from scraper.config.collector import CollectorConfig
from scraper.utils.layout import DataLayout

PROG = f"{RUNNER} history"
NOT_FOUND = 1
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_LOGIN_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
COLUMNS = ("period", "trending_language", "spoken_language_code", "first_seen", "last_seen",
           "days", "observations", "best_rank", "stars_first", "stars_last")
DEVELOPER_COLUMNS = ("period", "trending_language", "first_seen", "last_seen", "days",
                     "observations", "best_rank", "repo_first", "repo_last", "name")


def full_name(text: str) -> str:
    if not (_NAME_RE.fullmatch(text) or _LOGIN_RE.fullmatch(text)):
        raise argparse.ArgumentTypeError(f"{text!r} is neither a repository name such as "
                                         "scrapy/scrapy nor a developer's login such as "
                                         "torvalds")
    return text


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = ("When was a repository trending: each list it was on, first and "
                          "last seen, days, best rank, stars at entry and exit.")
    add_config_option(parser)
    parser.add_argument("full_name", type=full_name, metavar="owner/name|login",
                        help="a repository, or a developer's login (the developer lists)")
    parser.add_argument("--json", action="store_true", help="one JSON object, for machines")
    parser.set_defaults(handler=cmd_history)


def cmd_history(args: argparse.Namespace, config: CollectorConfig) -> int:
    from runner.catalog.schema import SCHEMA_VERSION, connect

    path = DataLayout(config.data_dir).catalog_db
    if not path.exists():
        print(f"{PROG}: no catalog at {path}: run 'python -m runner catalog' first",
              file=sys.stderr)
        return NOT_FOUND
    conn = connect(path, readonly=True)
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
            print(f"{PROG}: {path} is from an earlier version: run 'python -m runner catalog' "
                  "once to bring it up to date", file=sys.stderr)
            return NOT_FOUND
        developer = "/" not in args.full_name
        if developer:
            rows = [dict(zip(DEVELOPER_COLUMNS, row, strict=True)) for row in
                    conn.execute(WHEN_DEVELOPER_TRENDING, {"login": args.full_name})]
        else:
            rows = [dict(zip(COLUMNS, row, strict=True)) for row in
                    conn.execute(WHEN_TRENDING, {"full_name": args.full_name})]
    except sqlite3.DatabaseError as exc:
        if "no such table" in str(exc):  # built before its tables existed (the developers')
            print(f"{PROG}: {path} is from an earlier version: run 'python -m runner catalog' "
                  "once to bring it up to date", file=sys.stderr)
        else:
            print(f"{PROG}: {path}: {exc}", file=sys.stderr)
        return NOT_FOUND
    finally:
        conn.close()
    if not rows:
        where = "trending developers list" if developer else "trending list"
        print(f"{PROG}: {args.full_name} was never seen on a {where} (catalog {path})",
              file=sys.stderr)
        return NOT_FOUND
    if developer:
        name = rows[-1].pop("name")
        for row in rows[:-1]:
            row.pop("name")
        print(json.dumps({"login": args.full_name, "developer": True, "name": name,
                          "lists": rows}, ensure_ascii=False) if args.json
              else render_developer(args.full_name, name, rows))
    elif args.json:
        print(json.dumps({"full_name": args.full_name, "lists": rows}, ensure_ascii=False))
    else:
        print(render(args.full_name, rows))
    return 0


def list_label(row: dict[str, Any]) -> str:
    label = f"{row['period']} {row['trending_language'] or 'all'}"
    spoken = row.get("spoken_language_code")
    return f"{label} ({spoken})" if spoken else label


def _stars(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _lines(header: str, last_column: str, rows: list[dict[str, Any]],
           cells: list[str]) -> str:
    """One screen: a header, then a line per list, 80 columns."""
    lines = [header, f"{'list':<20} {'first seen':<16} {'last seen':<16} {'days':>4} "
                     f"{'best':>4} {last_column:>15}"]
    for row, cell in zip(rows, cells, strict=True):
        line = (f"{list_label(row)[:20]:<20} {row['first_seen'][:16].replace('T', ' '):<16} "
                f"{row['last_seen'][:16].replace('T', ' '):<16} {row['days']:>4} "
                f"{row['best_rank']:>4} {cell:>15}")
        lines.append(line if len(line) <= 80 else line[:79] + "…")
    return "\n".join(lines)


def _lists(rows: list[dict[str, Any]]) -> str:
    return f"{len(rows)} list{'s' if len(rows) != 1 else ''}"


def render(name: str, rows: list[dict[str, Any]]) -> str:
    return _lines(f"{name} on GitHub trending: {_lists(rows)}", "stars in → out", rows,
                  [f"{_stars(r['stars_first'])} → {_stars(r['stars_last'])}" for r in rows])


def render_developer(login: str, name: str | None, rows: list[dict[str, Any]]) -> str:
    """As :func:`render`, for a developer: the popular repository shown last on each list."""
    who = f"{login} ({name})" if name and name != login else login
    return _lines(f"{who}, a developer, on GitHub trending developers: {_lists(rows)}",
                  "popular repo", rows, [_repo(login, r["repo_last"]) for r in rows])


def _repo(login: str, full_name: str | None) -> str:
    """A developer's own repository by its name (the column is 15 wide), another's whole."""
    if not full_name:
        return "-"
    return full_name.removeprefix(f"{login}/")
