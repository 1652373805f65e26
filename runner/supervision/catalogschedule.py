"""The runner's catalog child: ``python -m runner catalog`` every ``catalog_interval``, niced.

At most one at a time: the next is due ``catalog_interval`` after the last one ended, and the
build itself takes a lock, so a child left by a killed runner and one started by its successor
(or by hand) never build together. The child is niced (it must not slow the workers), dies with
the runner like a worker does (a build killed midway loses nothing: see
:mod:`runner.catalog.build`), and writes to ``logs/catalog.log``.

The supervisor owns every ``waitpid``: it hands this schedule the exits that are not its
workers' (:meth:`CatalogSchedule.reaped`).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time

from runner.supervision.exitstatus import describe_exit
from runner.supervision.worker import die_with_parent
from scraper.config.collector import CollectorConfig
from scraper.utils.layout import DataLayout

logger = logging.getLogger("runner")

NICENESS = 10


class CatalogSchedule:
    def __init__(self, config: CollectorConfig, config_path: str | None, *,
                 enabled: bool = True) -> None:
        self.enabled = enabled
        self.interval = config.catalog_interval if enabled else 0.0
        self.config_path = config_path
        self.layout = DataLayout(config.data_dir)
        self.pid: int | None = None
        self.next_at = time.monotonic() + self.interval
        self.started_at = 0.0

    def tick(self, now: float | None = None) -> None:
        """Start the child if it is due and none is running."""
        if self.interval <= 0 or self.pid is not None:
            return
        if (time.monotonic() if now is None else now) >= self.next_at:
            self.pid = self._spawn()
            self.started_at = time.monotonic()

    def reaped(self, pid: int, status: int) -> bool:
        """True if ``pid`` was the catalog child (its exit is logged; the next one scheduled)."""
        if pid != self.pid:
            return False
        self.pid = None
        self.next_at = time.monotonic() + self.interval
        ok, how = describe_exit(status)
        took = time.monotonic() - self.started_at
        if ok:
            logger.info("catalog updated in %.1f s", took)
        else:
            logger.warning("catalog build ended (%s) after %.1f s; see %s; next in %.0f s",
                           how, took, self.layout.catalog_log, self.interval)
        return True

    def stop(self) -> None:
        """SIGTERM a running child and reap it: what it committed is kept."""
        if self.pid is None:
            return
        try:
            os.kill(self.pid, signal.SIGTERM)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        self.pid = None

    def _spawn(self) -> int:
        argv = [sys.executable, "-m", "runner", "catalog", "--scheduled"]
        if self.config_path:
            argv += ["--config", self.config_path]
        self.layout.logs_dir.mkdir(parents=True, exist_ok=True)
        parent = os.getpid()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid:
            return pid
        try:  # the child: never returns
            die_with_parent(parent)
            os.nice(NICENESS)
            os.setpgid(0, 0)  # a ^C in the runner's terminal is the runner's to handle
            log_fd = os.open(self.layout.catalog_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(log_fd, 1)
            os.dup2(log_fd, 2)
            os.execv(sys.executable, argv)
        finally:
            os._exit(127)
