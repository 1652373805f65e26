"""Stopping a hung or degraded runner, and starting its command line again, detached.

The restarted runner must outlive the cron job that starts it and must not hold cron's pipe
(cron waits for EOF on a job's stdout before it mails), so it gets its own session, /dev/null
for input and ``logs/runner.log`` for output.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil

from runner.ops.health import healthy_slots
from runner.ops.notify import log_to_runner_log
from runner.pidfile import running_pid
from scraper.config import CONFIG_ENV
from scraper.layout import DataLayout

UP_TIMEOUT = 60.0
"""How long a restarted runner has to hold its pidfile and show its workers running."""
KILL_GRACE = 5.0


class RestartFailed(Exception):
    """The restart did not work; the message completes ``collector restart failed: …``."""


def stop_runner(pid: int, layout: DataLayout, stop_timeout: float) -> None:
    """SIGTERM, ``stop_timeout`` + 5 s, then SIGKILL; returns once it and its workers are gone."""
    try:
        process = psutil.Process(pid)
        workers = process.children()
    except psutil.NoSuchProcess:
        return
    try:
        os.kill(pid, signal.SIGTERM)
        # A stopped (SIGSTOP, ^Z) runner would keep SIGTERM pending forever; continuing it lets
        # it stop its workers cleanly instead of dying with them on SIGKILL.
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        return
    except OSError as exc:
        raise RestartFailed(f"cannot signal runner pid {pid}: {exc.strerror}") from None
    if not _wait_gone(process, layout, stop_timeout + KILL_GRACE):
        log_to_runner_log(layout, "runner.watchdog", logging.WARNING,
                          f"runner pid {pid} still running {stop_timeout + KILL_GRACE:g} s "
                          "after SIGTERM: SIGKILL")
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
        if not _wait_gone(process, layout, KILL_GRACE):
            raise RestartFailed(f"runner pid {pid} survived SIGKILL")
    # Its workers die with it (PR_SET_PDEATHSIG); wait for that, so that no worker of the old
    # runner still holds a spider-shard when the new runner forks the same one.
    _, leftover = psutil.wait_procs(workers, timeout=KILL_GRACE)
    for worker in leftover:
        with contextlib.suppress(psutil.Error):
            worker.kill()


def _wait_gone(process: psutil.Process, layout: DataLayout, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        # Not our child, so it may linger as a zombie: the released pidfile lock says it is done.
        try:
            gone = (not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
                    or running_pid(layout.runner_pidfile) != process.pid)
        except psutil.NoSuchProcess:
            gone = True
        if gone:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def runner_environment(pid: int) -> dict[str, str] | None:
    """A live runner's environment, to start its successor with the same (tokens included)."""
    try:
        return psutil.Process(pid).environ()
    except psutil.Error:
        return None


def start_detached(runner: dict[str, Any], layout: DataLayout,
                   environ: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """The recorded command in its recorded directory, in a new session, output to runner.log.

    ``environ`` is the old runner's environment when it could still be read; else this
    process's, which under cron is bare: a token must then reach cron (docs/operations.md).
    """
    command = runner.get("command")
    cwd = runner.get("cwd")
    if not (isinstance(command, list) and command and all(isinstance(a, str) for a in command)):
        raise RestartFailed("status.json records no command line to restart")
    if not isinstance(cwd, str) or not Path(cwd).is_dir():
        raise RestartFailed(f"the runner's directory {cwd!r} is gone")
    env = dict(environ or os.environ)
    if runner.get("config"):
        # The file the runner really read, even if it found it as ./collector.yaml.
        env[CONFIG_ENV] = str(runner["config"])
    layout.logs_dir.mkdir(parents=True, exist_ok=True)
    try:
        with open(layout.runner_log, "ab") as log:
            return subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True, close_fds=True)
    except OSError as exc:
        raise RestartFailed(f"cannot start {command[0]}: {exc.strerror}") from None


def wait_until_up(process: subprocess.Popen[bytes], layout: DataLayout,
                  min_workers: int | None) -> int:
    """Healthy slots once the new runner holds its pidfile and its status shows them running."""
    from runner.status import read_json

    deadline = time.monotonic() + UP_TIMEOUT
    healthy = planned = 0
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            raise RestartFailed(f"the runner exited with status {code}; see {layout.runner_log}")
        status = read_json(layout.status_file) or {}
        runner = status.get("runner") or {}
        if running_pid(layout.runner_pidfile) == process.pid and runner.get("pid") == process.pid:
            workers = status.get("workers") or []
            planned = int(runner.get("planned") or len(workers))
            healthy = healthy_slots(workers, process.pid, time.time())
            if healthy >= min(min_workers or planned, planned):
                return healthy
        time.sleep(0.2)
    raise RestartFailed(f"only {healthy}/{planned} workers running after {UP_TIMEOUT:.0f} s "
                        f"(runner pid {process.pid}); see {layout.runner_log}")
