"""``python -m runner watchdog [--min-workers N]``: silent while healthy, else restart the runner.

Cron runs it every five minutes (``scripts/watchdog.sh``) and mails whatever it prints, so a
healthy collector prints nothing. It reads the runner's pidfile (the lock is the truth about
whether a runner is alive) and ``state/status.json``, and asks psutil about the processes.

A worker slot is healthy when the status says ``running`` and its pid is a live child of the
runner, or ``sleeping`` with its next round not overdue. The collector is down when the runner is
gone, when fewer than N slots are healthy (default: all the plan's), or when the status is stale
(not written for 3 × ``round_interval`` + 60 s: the runner's loop writes it every 2 s, so it is
hung). A live runner is stopped first (SIGTERM, SIGKILL after ``stop_timeout`` + 5 s), then the
command line recorded in the status is started again in its own session, in its recorded
directory, with its output appended to ``logs/runner.log``. Exactly two lines are printed::

    collector down: 12/20 workers (runner pid 4242 alive); restarting
    collector restarted: 20 workers
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from runner.argtypes import positive_int
from runner.ops.health import CONFIRM_TIMEOUT, assess, next_status
from runner.ops.joblock import exclusive_or_skip
from runner.ops.notify import log_to_runner_log, say
from runner.pidfile import running_pid
from runner.ops.restart import (
    RestartFailed,
    runner_environment,
    start_detached,
    stop_runner,
    wait_until_up,
)
from scraper.config import CollectorConfig
from scraper.layout import DataLayout

PROG = "python -m runner"
USAGE_ERROR = 2
TROUBLE = 1


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = "Print nothing while the collector is healthy; else restart it."
    add_config_option(parser)
    parser.add_argument("--min-workers", type=positive_int, metavar="N",
                        help="healthy worker slots required (default: all the plan's)")
    parser.set_defaults(handler=cmd_watchdog)


# --- the command ----------------------------------------------------------------------------------


def cmd_watchdog(args: argparse.Namespace, config: CollectorConfig) -> int:
    from runner.status import read_json

    layout = DataLayout(config.data_dir)
    if not layout.status_file.exists():
        print(f"no runner has ever run on {config.data_dir} (no {layout.status_file.name}), so "
              f"the watchdog cannot know its command line: start it once with "
              f"'{PROG} --workers N'")
        return TROUBLE
    status = read_json(layout.status_file)
    if not isinstance(status, dict) or not isinstance(status.get("runner"), dict):
        print(f"{PROG}: watchdog: cannot read {layout.status_file}", file=sys.stderr)
        return USAGE_ERROR
    try:
        with exclusive_or_skip(layout.state_dir / "watchdog.lock") as mine:
            if not mine:
                return 0  # another watchdog run is on it
            return _check(status, layout, config, args.min_workers)
    except OSError as exc:
        print(f"{PROG}: watchdog: {exc}", file=sys.stderr)
        return USAGE_ERROR


def _check(status: dict[str, Any], layout: DataLayout, config: CollectorConfig,
           min_workers: int | None) -> int:
    runner = status["runner"]
    lock_pid = running_pid(layout.runner_pidfile)
    if runner.get("once"):
        if lock_pid is not None:
            return 0  # a one-off round: not the watchdog's to judge
        print(f"the last runner on {config.data_dir} was a --once run, which the watchdog does "
              f"not restart: start the collector with '{PROG} --workers N'")
        return TROUBLE
    verdict = assess(status, lock_pid, min_workers, time.time())
    if verdict.kind == "degraded":
        # Confirm on the next status the runner writes (every 2 s). Until then a worker that has
        # just ended is still "running" with a pid that is gone, and one that crashed is being
        # restarted by the runner: neither is a reason to restart everything.
        status = next_status(layout, status, CONFIRM_TIMEOUT)
        verdict = assess(status, running_pid(layout.runner_pidfile), min_workers, time.time(),
                         earlier=verdict.problems)
    if verdict.ok:
        return 0
    line = verdict.down_line()
    say(config, line)
    log_to_runner_log(layout, "runner.watchdog", logging.WARNING,
                      f"{line}: {' '.join(runner.get('command') or [])}")
    try:
        environ = None
        if verdict.runner_pid is not None:
            environ = runner_environment(verdict.runner_pid)
            stop_runner(verdict.runner_pid, layout, config.stop_timeout)
        process = start_detached(runner, layout, environ)
        healthy = wait_until_up(process, layout, min_workers)
    except RestartFailed as exc:
        line = f"collector restart failed: {exc}"
        code = TROUBLE
    else:
        line = f"collector restarted: {healthy} workers"
        code = 0
    say(config, line)
    log_to_runner_log(layout, "runner.watchdog", logging.INFO if code == 0 else logging.ERROR,
                      line)
    return code
