"""``items_keep_days``: item segments the catalog (or the dataset box) holds are removed from
disk once they are older than that; the catalog's history never is."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path


def remove_older(paths: Iterable[Path], keep_days: int, now: float | None = None) -> int:
    """Remove those of ``paths`` not modified for ``keep_days``; how many went."""
    cutoff = (time.time() if now is None else now) - keep_days * 86400
    removed = 0
    for path in paths:
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:
            continue
    return removed
