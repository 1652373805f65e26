"""``python -m runner history owner/name [--json]``: when was it trending, from the catalog.

One line per list it appeared on (period, language, spoken language): first and last seen, the
days it was seen there (UTC dates), best rank, stars at entry and at exit. A name never seen is
one line on stderr and exit 1, so a script can ask ``history x/y && …``.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from collections.abc import Callable
from typing import Any

from runner.dataset.queries import WHEN_TRENDING
from runner.usage import PROG as RUNNER
from scraper.config import CollectorConfig
from scraper.layout import DataLayout

PROG = f"{RUNNER} history"
NOT_FOUND = 1
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
COLUMNS = ("period", "trending_language", "spoken_language_code", "first_seen", "last_seen",
           "days", "observations", "best_rank", "stars_first", "stars_last")


def full_name(text: str) -> str:
    if not _NAME_RE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a repository name such as "
                                         "scrapy/scrapy")
    return text


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = ("When was a repository trending: each list it was on, first and "
                          "last seen, days, best rank, stars at entry and exit.")
    add_config_option(parser)
    parser.add_argument("full_name", type=full_name, metavar="owner/name")
    parser.add_argument("--json", action="store_true", help="one JSON object, for machines")
    parser.set_defaults(handler=cmd_history)


def cmd_history(args: argparse.Namespace, config: CollectorConfig) -> int:
    from runner.dataset.schema import SCHEMA_VERSION, connect

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
        rows = [dict(zip(COLUMNS, row, strict=True)) for row in
                conn.execute(WHEN_TRENDING, {"full_name": args.full_name})]
    except sqlite3.DatabaseError as exc:
        print(f"{PROG}: {path}: {exc}", file=sys.stderr)
        return NOT_FOUND
    finally:
        conn.close()
    if not rows:
        print(f"{PROG}: {args.full_name} was never seen on a trending list (catalog {path})",
              file=sys.stderr)
        return NOT_FOUND
    if args.json:
        print(json.dumps({"full_name": args.full_name, "lists": rows}, ensure_ascii=False))
    else:
        print(render(args.full_name, rows))
    return 0


def list_label(row: dict[str, Any]) -> str:
    label = f"{row['period']} {row['trending_language'] or 'all'}"
    return f"{label} ({row['spoken_language_code']})" if row["spoken_language_code"] else label


def _stars(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def render(name: str, rows: list[dict[str, Any]]) -> str:
    """One screen: a header, then a line per list, 80 columns."""
    lines = [f"{name} on GitHub trending: {len(rows)} list{'s' if len(rows) != 1 else ''}",
             f"{'list':<20} {'first seen':<16} {'last seen':<16} {'days':>4} {'best':>4} "
             f"{'stars in → out':>15}"]
    for row in rows:
        stars = f"{_stars(row['stars_first'])} → {_stars(row['stars_last'])}"
        lines.append(f"{list_label(row)[:20]:<20} {row['first_seen'][:16].replace('T', ' '):<16} "
                     f"{row['last_seen'][:16].replace('T', ' '):<16} {row['days']:>4} "
                     f"{row['best_rank']:>4} {stars:>15}")
    return "\n".join(lines)
