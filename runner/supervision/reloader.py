"""The runner's side of a reload (SIGHUP): read the config again, judge it, say what to run.

A valid config is re-planned and used from each worker's next round, with one log line saying
what changed; an invalid one is one log line and the running config stays; a change that needs a
restart is refused with one line (:func:`runner.supervision.reload.refusal`). Each outcome is
written to ``state/reload.json`` for ``python -m runner reload``.

The file is read on a thread of its own, never on the runner's loop: whatever the path names (a
file on a hung network mount, a YAML document that takes seconds to expand), the loop keeps
reaping, starting rounds and writing status, and a read that has not ended within
:data:`READ_TIMEOUT` is refused with one line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from runner.supervision.plan import Plan
from runner.supervision.reload import config_changes, refusal, write_result
from scraper.config.collector import CollectorConfig, ConfigError
from scraper.utils.layout import DataLayout

logger = logging.getLogger("runner")

READ_TIMEOUT = 10.0
"""Seconds a reload's read of the config may take before it is refused (``reload`` waits 15)."""


@dataclass(slots=True)
class _Read:
    """One read in flight on its thread: the config it got, or the error, once ``done``."""

    started: float
    done: threading.Event = field(default_factory=threading.Event)
    config: CollectorConfig | None = None
    error: ConfigError | None = None


class ConfigReloader:
    def __init__(self, layout: DataLayout, reread: Callable[[], CollectorConfig] | None,
                 replan: Callable[[CollectorConfig], Plan] | None, *,
                 wake: Callable[[], None] = lambda: None,
                 timeout: float = READ_TIMEOUT) -> None:
        self.layout = layout
        self.reread = reread  # None: this runner cannot reload (a test's, a one-off's)
        self.replan = replan
        self.wake = wake  # wakes the loop when a read ends, so the answer does not wait a tick
        self.timeout = timeout
        self.requested = False  # set by the SIGHUP handler; the loop acts on it
        self.read: _Read | None = None

    def request(self) -> None:
        self.requested = True

    @property
    def reading(self) -> bool:
        """A read is in flight: the loop forks no worker meanwhile (a fork copies no thread)."""
        return self.read is not None

    def poll(self, running: CollectorConfig) -> tuple[CollectorConfig, Plan] | None:
        """Called on every turn of the loop: starts the read a SIGHUP asked for, and once it has
        ended, the config and plan to run from now on, or None when the running ones stay."""
        if self.read is None:
            if self.requested:
                self.requested = False
                self._start()
            return None
        read = self.read
        if not read.done.is_set():
            if time.monotonic() - read.started > self.timeout:
                self.read = None  # the thread is a daemon: left to end, or not, on its own
                self._answer(False, f"reload refused: reading the config took longer than "
                                    f"{self.timeout:g} s; the running config stays")
            return None
        self.read = None
        if read.error is not None:
            self._answer(False, f"reload refused: {read.error}; the running config stays")
            return None
        assert read.config is not None
        return self._judge(running, read.config)

    def _start(self) -> None:
        if self.reread is None or self.replan is None:
            self._answer(False, "reload refused: this runner cannot reload")
            return
        read = self.read = _Read(time.monotonic())
        reread = self.reread

        def run() -> None:
            try:
                read.config = reread()
            except ConfigError as exc:
                read.error = exc
            finally:
                read.done.set()
                self.wake()

        threading.Thread(target=run, name="config-reload", daemon=True).start()

    def _judge(self, running: CollectorConfig,
               new: CollectorConfig) -> tuple[CollectorConfig, Plan] | None:
        assert self.replan is not None
        why = refusal(running, new)
        if why:
            self._answer(False, f"reload refused: {why}")
            return None
        changes = config_changes(running, new)
        if not changes:
            self._answer(True, "reload: the config is unchanged")
            return None
        plan = self.replan(new)
        if plan.total == 0:
            self._answer(False, "reload refused: nothing to run with the new config; "
                                "the running config stays")
            return None
        self._answer(True, f"reload: {', '.join(changes)} changed; from each worker's next "
                           f"round: {plan.describe()}")
        return new, plan

    def _answer(self, ok: bool, message: str) -> None:
        (logger.info if ok else logger.error)("%s", message)
        try:
            write_result(self.layout, ok, message)
        except OSError as exc:
            logger.warning("cannot write %s: %s", self.layout.reload_file, exc)
