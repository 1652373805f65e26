"""``status.json``, the metrics textfile and the cluster beacon, written as the runner's loop goes.

The watchdog judges a runner hung by the age of its status file, so it is written every
``STATUS_INTERVAL`` whatever happens, and at once (``force``) when something a reader must see
changed: a stop, a full disk. Each write also refreshes node_exporter's textfile (and, every ten
minutes, the size sample); in the distributed mode the same beat goes to Redis.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runner.core.runnerstate import StatusFile, write_status
from runner.status.metrics import MetricsWriter
from scraper.utils.diskspace import is_disk_full
from scraper.utils.layout import DataLayout

if TYPE_CHECKING:
    from scraper.cluster.registry import RunnerBeacon

logger = logging.getLogger("runner")

STATUS_INTERVAL = 2.0
"""Seconds between writes of ``status.json``."""


class StatusWriter:
    def __init__(self, layout: DataLayout, snapshot: Callable[[], StatusFile],
                 metrics: MetricsWriter, beacon: RunnerBeacon | None = None,
                 beacon_record: Callable[[], dict[str, Any]] | None = None,
                 on_disk_full: Callable[[], None] = lambda: None) -> None:
        self.path = layout.status_file
        self.snapshot = snapshot
        self.metrics = metrics
        self.beacon = beacon
        self.beacon_record = beacon_record
        self.on_disk_full = on_disk_full  # the disk gate: it says so, and holds new rounds
        self.last: float | None = None  # time.monotonic() of the last write
        self.failing = False  # the last write failed: said once, not every STATUS_INTERVAL

    def write_if_due(self) -> None:
        if self.last is None or time.monotonic() - self.last >= STATUS_INTERVAL:
            self.write()

    def write(self, force: bool = False) -> None:
        self.last = time.monotonic()
        if self.beacon is not None and self.beacon_record is not None:
            self.beacon.beat(self.beacon_record(), force=force)
        try:
            write_status(self.path, self.snapshot())
        except OSError as exc:
            full = is_disk_full(exc)
            if not self.failing:
                # A full disk has its own line (the disk gate's): this one goes to the log.
                logger.log(logging.INFO if full else logging.WARNING, "cannot write status: %s",
                           exc)
            self.failing = True
            if full:
                self.on_disk_full()
        else:
            self.failing = False
        self.metrics.write()
