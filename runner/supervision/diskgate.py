"""The disk gate: no new worker starts while the data disk is full.

A worker that finds the disk full exits with ``DISK_FULL_EXIT`` and its slot waits; the gate
keeps new rounds from starting until ``RESUME_FREE_BYTES`` are free again (more than the
``START_FREE_BYTES`` a start needs, so the runner does not flap at the boundary). The reserve
file it holds is released when the disk fills: room for ``status.json`` and the log line that
says why nothing runs. A ``--once`` run waits for no space: it ends once the rounds running
then have, with ``DISK_FULL_EXIT``, and the gate's line is the one that says so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from scraper.utils.diskspace import (
    DISK_FULL_EXIT,
    RESUME_FREE_BYTES,
    START_FREE_BYTES,
    DiskReserve,
    free_bytes,
)
from scraper.utils.layout import DataLayout
from scraper.utils.units import format_size

logger = logging.getLogger("runner")


class DiskGate:
    def __init__(self, layout: DataLayout, on_full: Callable[[], None], *,
                 once: bool = False) -> None:
        self.root = layout.root
        self.once = once
        self.reserve = DiskReserve(layout.disk_reserve)
        self.on_full = on_full  # told once when the disk fills (the runner writes its status)
        self.full_since: float | None = None  # wall clock, shown

    def has_room(self) -> bool:
        """False while the data disk is full; logs the change both ways, once."""
        free = free_bytes(self.root)
        needed = RESUME_FREE_BYTES if self.full_since else START_FREE_BYTES
        if free >= needed:
            if self.full_since:
                logger.warning("disk space is back (%s free): resuming workers",
                               format_size(free))
                self.full_since = None
                self.reserve.ensure()
            return True
        self.mark_full()
        return False

    def mark_full(self) -> None:
        """The disk is full (a free-space check, or a worker that exited for it)."""
        if self.full_since:
            return
        self.full_since = time.time()
        self.reserve.release()
        free = format_size(free_bytes(self.root))
        if self.once:
            logger.error("disk full: %s has %s free; --once ends when the rounds running now "
                         "have, with exit status %d: free space and run it again", self.root,
                         free, DISK_FULL_EXIT)
        else:
            logger.error("disk full: %s has %s free; no new workers until %s are free",
                         self.root, free, format_size(RESUME_FREE_BYTES))
        self.on_full()
