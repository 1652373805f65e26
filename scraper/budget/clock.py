"""The budget's steady clock: epoch-like seconds that no wall-clock step moves.

Every worker on the machine paces on one clock. ``time.monotonic()`` is that clock for every
process since boot, and never steps; adding one offset per boot, kept beside the budget
(``state/budget-clock.json``, with the kernel's boot id), makes its readings epoch seconds as the
wall clock stood when the machine's first worker started, so stored times stay readable and
carry over a reboot as well as the wall clock does then. The wall clock itself is read only to
measure how far away GitHub's ``x-ratelimit-reset`` is (:meth:`RateHeaders.reset_in`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from scraper.utils.statefile import read_json, write_json_atomic

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:  # not Linux: one offset per process start is the best there is
        return f"process-{time.monotonic_ns()}"


def steady_clock(path: Path) -> Callable[[], float]:
    """A clock reading ``time.monotonic()`` plus this boot's offset, kept in ``path``."""
    boot = boot_id()
    record = read_json(path) or {}
    offset = record.get("offset")
    if record.get("boot_id") != boot or not isinstance(offset, float):
        offset = time.time() - time.monotonic()
        with contextlib.suppress(OSError):  # a full or read-only disk: the store reports it
            write_json_atomic(path, {"boot_id": boot, "offset": offset})
        # Two workers starting at once both write; the file's last word is everyone's.
        kept = read_json(path) or {}
        if kept.get("boot_id") == boot and isinstance(kept.get("offset"), float):
            offset = kept["offset"]

    def now() -> float:
        return time.monotonic() + offset

    return now
