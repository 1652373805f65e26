"""Markup drift: a page that still parses to rows, but rows that lost what the list had.

GitHub changes its markup about once a year; the first sign is rarely zero rows (that is
``empty``) but rows that lose a field: every ``language`` null, every star count 0, every
description gone, or far fewer rows than usual. Each fetch's parse is compared with the same
list's last :data:`DRIFT_ROUNDS` fetches (from the page archive, which records what each parse
found), so the change is caught in the round it happens, named by list and field.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from scrapy.statscollectors import StatsCollector

from scraper.trending.archive import ParseProfile

DRIFT_ROUNDS = 3
"""Earlier fetches of the list a parse is compared with."""
DRIFT_LISTINGS = "outcome/drift_listings"
DRIFT_REASON = "outcome/drift"

REPOSITORY_FIELDS = (("with_language", "language"), ("with_stars", "stars"),
                     ("with_description", "description"))
"""What each count of a repository page's :class:`ParseProfile` is, by the name a line says."""
DEVELOPER_FIELDS = (("with_language", "name"), ("with_stars", "popular repository"),
                    ("with_description", "repository description"))
"""The same counts of a developer page: rows with a display name, a popular repository, and
that repository's description."""


def drift_reason(current: ParseProfile, earlier: Sequence[ParseProfile],
                 fields: Sequence[tuple[str, str]] = REPOSITORY_FIELDS) -> str | None:
    """What the current parse lost against the list's earlier ones, or None.

    A field counts as the list's when at least half the rows had it in the median earlier
    fetch; it is lost when no row has it now. Rows are lost when fewer than half the median
    remain. Zero rows is not drift (it is ``empty``), nor is a list with no history yet.
    """
    before = [p for p in earlier if p.rows]
    if not current.rows or not before:
        return None
    usual_rows = median(p.rows for p in before)
    lost = [name for attribute, name in fields
            if median(getattr(p, attribute) / p.rows for p in before) >= 0.5
            and getattr(current, attribute) == 0]
    parts = [f"{', '.join(lost)} missing on all {current.rows} rows"] if lost else []
    if current.rows < usual_rows / 2:
        parts.append(f"{current.rows} rows where the list had {usual_rows:g}")
    return "; ".join(parts) or None


def note_drift(stats: StatsCollector, url: str, reason: str) -> str:
    """Count a drifted page; the round's first one is kept as the line health reports."""
    stats.inc_value(DRIFT_LISTINGS)
    line = f"markup drift: {url}: {reason}"
    if not stats.get_value(DRIFT_REASON):
        stats.set_value(DRIFT_REASON, line)
    return line
