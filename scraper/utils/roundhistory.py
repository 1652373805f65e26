"""A spider-shard's rounds of the last days, and whether this round moved away from them.

A collector can be stuck without failing: answers come, but a list yields half its rows, its
rows lose their fields, a round stores a fraction of its usual items or bytes, or errors
pile up. Each round that ended normally and got data is compared with the same spider-shard's
rounds of the last ``ROUND_HISTORY_DAYS`` (median per figure), and is *unusual* when a figure
moves past ``ROUND_UNUSUAL_RATIO``: below ratio × the median (a list's rows or field coverage,
the round's items or bytes), or above the median / ratio (errors).

The history is ``state/rounds/{spider}-{i}of{N}.json``: at most :data:`MAX_ROUNDS` rounds, none
older than the window, replaced atomically after an fsync (a kill keeps the old file or the
new); an unreadable file is an empty history, and rounds are compared again once
:data:`MIN_ROUNDS` are kept.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from scraper.utils.statefile import from_dict, read_json, write_json_atomic

MAX_ROUNDS = 500
"""Rounds kept per spider-shard, whatever the window: a week of hourly rounds fits thrice; a
shard run every minute keeps its last 500, a median as good."""
MIN_ROUNDS = 3
"""Earlier rounds a figure needs before it is compared: one or two are no usual yet."""
MIN_ITEMS = 20
"""A round's items are compared when their median is at least this: most rounds store little
that is new (collected content is left out), and 2 against 5 is no news."""
SHOWN = 3
"""Figures an unusual line names; the rest are counted."""


@dataclass
class RoundFigures:
    """One round's figures, as the history keeps them."""

    at: float = 0.0
    items: int = 0  # stored (new) items
    bytes: int = 0  # response bytes received
    errors: int = 0  # ERROR lines logged
    rows: dict[str, int] = field(default_factory=dict)  # list → rows parsed, duplicates too
    coverage: dict[str, float] = field(default_factory=dict)  # list → share of fields filled


def read_history(path: Path) -> list[RoundFigures]:
    data = read_json(path)
    rounds = data.get("rounds") if data is not None else None
    return [from_dict(RoundFigures, entry) for entry in rounds or () if isinstance(entry, dict)]


def write_history(path: Path, rounds: list[RoundFigures], now: float, days: float) -> None:
    """``rounds`` without those older than ``days`` before ``now``, the newest MAX_ROUNDS."""
    kept = [r for r in rounds if r.at > now - days * 86400][-MAX_ROUNDS:]
    write_json_atomic(path, {"version": 1, "rounds": [asdict(r) for r in kept]})


def unusual(current: RoundFigures, earlier: list[RoundFigures], ratio: float) -> str | None:
    """One line naming what moved past ``ratio`` against ``earlier``'s medians, or None."""
    found = []
    for key, rows in sorted(current.rows.items()):
        if not rows:
            continue  # a 304: unchanged, no rows to count
        usual = _usual([r.rows.get(key, 0) for r in earlier if r.rows.get(key)])
        if usual is not None and rows < ratio * usual:
            found.append(f"{key}: {rows} rows, median {usual:g}")
        usual = _usual([r.coverage[key] for r in earlier if r.rows.get(key)
                        and isinstance(r.coverage.get(key), int | float)])
        filled = current.coverage.get(key, 1.0)
        if usual is not None and filled < ratio * usual:
            found.append(f"{key}: {filled:.0%} of fields filled, median {usual:.0%}")
    items = _usual([r.items for r in earlier])
    if items is not None and items >= MIN_ITEMS and current.items < ratio * items:
        found.append(f"{current.items} items, median {items:g}")
    size = _usual([r.bytes for r in earlier])
    if size and current.bytes < ratio * size:
        found.append(f"{current.bytes} bytes received, median {size:g}")
    errors = _usual([r.errors for r in earlier])
    if errors is not None and current.errors > max(errors, 1) / ratio:
        found.append(f"{current.errors} errors, median {errors:g}")
    if not found:
        return None
    more = len(found) - SHOWN
    return "; ".join(found[:SHOWN]) + (f"; {more} more" if more > 0 else "")


def _usual(values: list[Any]) -> float | None:
    return float(median(values)) if len(values) >= MIN_ROUNDS else None
