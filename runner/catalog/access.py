"""Where the catalog is, and how the commands that read it (export, report, view) open it."""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from runner.catalog.schema import connect
from runner.core.usage import USAGE_ERROR
from scraper.utils.layout import DataLayout


def existing_catalog(layout: DataLayout, prog: str) -> Path | None:
    """The catalog's path, or None after saying on stderr how to build one."""
    path = layout.catalog_db
    if path.exists():
        return path
    from runner.catalog.gather import known_elsewhere

    elsewhere = known_elsewhere(layout)
    if elsewhere:  # a box of a cluster: the dataset is on another one
        print(f"{prog}: no catalog here; " + elsewhere.removeprefix("catalog: "), file=sys.stderr)
        return None
    print(f"{prog}: no catalog at {path}: run 'python -m runner catalog' first",
          file=sys.stderr)
    return None


def read_into(layout: DataLayout, out: Path, prog: str,
              work: Callable[[sqlite3.Connection, Path], None]) -> int:
    """Run ``work`` on a read-only catalog connection with ``out`` created; the exit status."""
    catalog = existing_catalog(layout, prog)
    if catalog is None:
        return USAGE_ERROR
    try:
        out.mkdir(parents=True, exist_ok=True)
        conn = connect(catalog, readonly=True)
        try:
            work(conn, out)
        finally:
            conn.close()
    except OSError as exc:
        print(f"{prog}: {exc.filename or out}: {exc.strerror}", file=sys.stderr)
        return 1
    return 0


def open_fresh(path: Path, mode: str = "w", **options: Any) -> IO[Any]:
    """A new file at ``path``, opened for writing; whatever was there (a symlink planted in
    ``--out`` included) is removed first, never written through (``O_EXCL | O_NOFOLLOW``)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    return os.fdopen(fd, mode, **options)
