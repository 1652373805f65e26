"""Reading what the stores wrote, as a reader outside the collector would."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def rows(path: Path, table: str = "entries") -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()
