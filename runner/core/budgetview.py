"""The GitHub budget rows of ``python -m runner status``: limit, remaining, resets in, paused.

Reads ``{data_dir}/state/budget.sqlite`` read-only (status never creates or changes it) and
shows identities only as labels: ``token …ab12`` is the last digits of the token's hash.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from scraper.budget.limits import identity_label
from scraper.utils.layout import DataLayout
from scraper.utils.units import format_duration


def budget_rows(layout: DataLayout, now: float | None = None) -> list[dict[str, Any]]:
    """One dict per budget; [] when no worker has used one yet (or the file is unreadable)."""
    path = layout.budget_db
    if not path.exists():
        return []
    from scraper.budget.store import read_buckets  # here: no file, no store to import

    now = time.time() if now is None else now
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            buckets = read_buckets(conn)
        finally:
            conn.close()
    except sqlite3.Error:
        return []
    return rows_from_buckets(buckets, now)


def rows_from_buckets(buckets: list[dict[str, Any]], now: float) -> list[dict[str, Any]]:
    """The budget's buckets (SQLite or Redis) as ``render_budget`` rows."""
    from scraper.budget.store import NO_LIMIT

    rows = []
    for bucket in buckets:
        unlimited = bucket["source"] == NO_LIMIT  # an API without rate limits
        capped = bool(bucket["capped"]) and not unlimited
        reset_at = bucket["reset_at"]
        current = capped and reset_at is not None and reset_at > now
        paused = bucket["pause_until"] > now
        rows.append({
            "resource": bucket["resource"],
            "identity": identity_label(bucket["identity"]),
            "unlimited": unlimited,
            "limit": bucket["limit_n"] if capped else None,
            "window": bucket["window_s"],
            # Past the reset a new window starts with the next request: all of it is left.
            "remaining": (bucket["remaining"] if current else bucket["limit_n"]) if capped
            else None,
            "resets_in": reset_at - now if current else None,
            "source": bucket["source"] if current else None,
            "paused_until": bucket["pause_until"] if paused else None,
            "pause_reason": bucket["pause_reason"] if paused else None,
            "waiting": bucket["waiting"],
            "in_flight": bucket["in_flight"],
        })
    return rows


def _limit(row: dict[str, Any]) -> str:
    if row.get("unlimited"):
        return "none"
    window = format_duration(row["window"])
    if row["limit"] is None:
        return f"1/{window}" if row["window"] else "no pace"
    return f"{row['limit']}/{window}"


def render_budget(rows: list[dict[str, Any]], now: float | None = None) -> list[str]:
    """The budget table's lines (no trailing newline), or one line saying there is none."""
    if not rows:
        return ["github budget: not used yet"]
    now = time.time() if now is None else now
    lines = [f"{'budget':<8} {'identity':<16} {'limit':>10} {'left':>6} {'resets':>6} "
             f"{'queued':>6}  paused"]
    for row in rows:
        left = "-" if row["remaining"] is None else str(row["remaining"])
        paused = "-"
        if row["paused_until"] is not None:
            clock = time.strftime("%H:%M:%S", time.localtime(row["paused_until"]))
            paused = f"until {clock} ({format_duration(row['paused_until'] - now)}): " \
                     f"{row['pause_reason'] or '?'}"
        queued = f"{row['waiting']}+{row['in_flight']}"
        lines.append(f"{row['resource']:<8} {row['identity']:<16} {_limit(row):>10} {left:>6} "
                     f"{format_duration(row['resets_in']):>6} {queued:>6}  {paused}")
    return lines
