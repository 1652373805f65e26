"""``python -m runner view``: the catalog in Datasette, with titles, column descriptions and
canned queries (``pip install -e '.[view]'``).

The metadata is written next to the catalog (``catalog-metadata.json``) each time, from the
same table definitions the build uses, so the viewer never describes a column that is not there.
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import json
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.catalog import queries
from runner.catalog.access import existing_catalog
from runner.catalog.schema import TABLES
from runner.core.usage import PROG as RUNNER
from runner.core.usage import USAGE_ERROR
from scraper.config.collector import CollectorConfig
from scraper.utils.layout import DataLayout

PROG = f"{RUNNER} view"
CANNED_LIMIT = 100
BOOKKEEPING_TABLES = ("loaded_files", "size_samples", "budget_samples", "docs_feed_entries",
                      "docs_feed_pending", "docs_feed_state")
"""The catalog's own records: hidden in Datasette (listed under its hidden tables, after the
data), so the first tables a visitor sees are the collected ones."""
SETTINGS = (("suggest_facets", "off"),)
"""Datasette settings of ``view``. Facet suggestions run a query per column on every table
page (up to 50 ms each): 1.0-1.45 s a page from a month of history on, 0.04 s without them.
Facets are still there to choose (a column's menu, ``?_facet=``); only the suggestions go."""


def metadata(database: str = "catalog") -> dict[str, Any]:
    """Datasette metadata for the catalog: every table and column described, canned queries."""
    canned = {
        "rising_this_week": ("Rising this week", "Stars gained over the last 7 days of "
                             "trending observations", queries.RISERS),
        "longest_on_trending": ("Longest on trending", "Time between first and last "
                                "observation on a trending list", queries.LONGEST_ON_TRENDING),
        "when_was_it_trending": ("When was it trending", "Each trending list a repository "
                                 "(owner/name) appeared on: first and last seen, days on the "
                                 "list, best rank, stars at entry and exit",
                                 queries.WHEN_TRENDING),
        "when_was_a_developer_trending": ("When was a developer trending", "Each trending "
                                          "developer list a login appeared on: first and last "
                                          "seen, days, best rank, the popular repository at "
                                          "entry and exit", queries.WHEN_DEVELOPER_TRENDING),
        "recently_changed_docs": ("Recently changed docs pages", "Documentation pages whose "
                                  "content changed, newest change first",
                                  queries.RECENTLY_CHANGED_DOCS),
        "gaps": ("Gaps", "Scheduled fetches that yielded nothing in the last :days days: "
                 "failed, skipped or silent, per trending list, search query and docs site, "
                 "with the cause", queries.GAPS),
    }
    limit = (":limit", str(CANNED_LIMIT))
    return {
        "title": "hubcollect catalog",
        "description": "GitHub trending history, search results and docs pages collected by "
                       "hubcollect",
        "databases": {database: {
            "tables": {table.name: {
                "title": table.title,
                "columns": {name: meaning for name, _, meaning in table.columns},
                **({"hidden": True} if table.name in BOOKKEEPING_TABLES else {}),
            } for table in TABLES},
            "queries": {name: {"title": title, "description": description,
                               "sql": sql.replace(*limit)}
                        for name, (title, description, sql) in canned.items()},
        }},
    }


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = "Open the catalog in Datasette (pip install -e '.[view]')."
    add_config_option(parser)
    parser.add_argument("--port", type=int, default=8001, metavar="N")
    parser.add_argument("--host", default="127.0.0.1", metavar="ADDR")
    parser.set_defaults(handler=cmd_view)


def port_problem(host: str, port: int) -> str | None:
    """Why Datasette could not listen on ``host:port``, or None. Asked before it starts: its
    server says a port in use in six lines of its own."""
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OverflowError:
        return f"--port {port} is not a port (1-65535)"
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return f"{host}:{port} is in use (another view?); choose another with --port N"
        return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def cmd_view(args: argparse.Namespace, config: CollectorConfig) -> int:
    problem = port_problem(args.host, args.port)
    if problem:
        print(f"{PROG}: {problem}", file=sys.stderr)
        return USAGE_ERROR
    if importlib.util.find_spec("datasette") is None:
        print(f"{PROG}: Datasette is not installed: pip install -e '.[view]'", file=sys.stderr)
        return USAGE_ERROR
    layout = DataLayout(config.data_dir)
    catalog = existing_catalog(layout, PROG)
    if catalog is None:
        return USAGE_ERROR
    meta = write_metadata(layout.catalog_metadata, catalog.stem)
    argv = datasette_argv(catalog, meta, args.host, args.port)
    os.execv(sys.executable, argv)
    return 0  # not reached


def datasette_argv(catalog: Path, meta: Path, host: str, port: int) -> list[str]:
    """``datasette serve`` of the catalog with its metadata and :data:`SETTINGS`."""
    settings = [arg for name, value in SETTINGS for arg in ("--setting", name, value)]
    return [sys.executable, "-m", "datasette", "serve", str(catalog), "--metadata", str(meta),
            *settings, "--host", host, "--port", str(port)]


def write_metadata(path: Path, database: str) -> Path:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(metadata(database), indent=1, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return path
