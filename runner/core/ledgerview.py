"""The gap ledger as the runner's commands show it: the last 24 hours per spider (``status``,
``metrics``) and the gaps as spans (``gaps``). The ledger itself: :mod:`scraper.utils.ledger`."""

from __future__ import annotations

from typing import Any

from scraper.utils.layout import DataLayout
from scraper.utils.ledger import (
    OUTCOMES,
    outcome_counts,
    scheduled_fetches,
    since_hours,
    yielded_share,
)

RECENT_HOURS = 24.0
"""The window of ``status``' share and ``metrics``' ledger counts."""


def recent_ledger(layout: DataLayout, hours: float = RECENT_HOURS) -> dict[str, dict[str, Any]]:
    """Per spider, the last ``hours``' scheduled fetches: ``{"outcomes": {outcome: n},
    "scheduled": n, "yielded_share": 0..1}`` (a round still running counts what it has
    reported)."""
    counts = outcome_counts(scheduled_fetches(layout.state_dir, since_hours(hours)))
    return {spider: {"outcomes": per, "scheduled": sum(per.values()),
                     "yielded_share": yielded_share(per)}
            for spider, per in sorted(counts.items())}


def share_lines(ledger: dict[str, dict[str, Any]]) -> list[str]:
    """``fetches that yielded data, last 24 h …:`` and a line per spider (``docs 67% (2/3;
    1 failed)``); none when nothing was scheduled."""
    lines = []
    for spider, row in ledger.items():
        outcomes, total = row["outcomes"], row["scheduled"]
        missing = [f"{outcomes[o]} {o.replace('_', ' ')}" for o in OUTCOMES[2:] if outcomes[o]]
        yielded = total - sum(outcomes[o] for o in OUTCOMES[2:])
        lines.append(f"  {spider} {row['yielded_share']:.0%} ({yielded}/{total}"
                     + (f"; {', '.join(missing)}" if missing else "") + ")")
    return ([f"fetches that yielded data, last {RECENT_HOURS:.0f} h (the rest: runner gaps):",
             *lines] if lines else [])
