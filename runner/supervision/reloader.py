"""The runner's side of a reload (SIGHUP): read the config again, judge it, say what to run.

A valid config is re-planned and used from each worker's next round, with one log line saying
what changed; an invalid one is one log line and the running config stays; a change that needs a
restart is refused with one line (:func:`runner.supervision.reload.refusal`). Each outcome is
written to ``state/reload.json`` for ``python -m runner reload``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from runner.supervision.plan import Plan
from runner.supervision.reload import config_changes, refusal, write_result
from scraper.config.collector import CollectorConfig, ConfigError
from scraper.utils.layout import DataLayout

logger = logging.getLogger("runner")


class ConfigReloader:
    def __init__(self, layout: DataLayout, reread: Callable[[], CollectorConfig] | None,
                 replan: Callable[[CollectorConfig], Plan] | None) -> None:
        self.layout = layout
        self.reread = reread  # None: this runner cannot reload (a test's, a one-off's)
        self.replan = replan
        self.requested = False  # set by the SIGHUP handler; the loop acts on it

    def request(self) -> None:
        self.requested = True

    def take(self, running: CollectorConfig) -> tuple[CollectorConfig, Plan] | None:
        """The config and plan to run from now on, or None when the running ones stay."""
        self.requested = False
        if self.reread is None or self.replan is None:
            self._answer(False, "reload refused: this runner cannot reload")
            return None
        try:
            new = self.reread()
        except ConfigError as exc:
            self._answer(False, f"reload refused: {exc}; the running config stays")
            return None
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
