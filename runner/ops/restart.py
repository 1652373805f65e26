"""Stopping a hung or degraded runner, and starting its command line again, detached.

The restarted runner must outlive the cron job that starts it and must not hold cron's pipe
(cron waits for EOF on a job's stdout before it mails), so it gets its own session, /dev/null
for input and ``logs/runner.log`` for output.

Only a ``python -m runner`` run is ever started, with this process's own interpreter: the
recorded command line must be ``… -m runner`` followed by options the runner's own parser
accepts for ``run``, so whoever can write ``state/`` cannot make the watchdog run anything else.
The Redis password is never recorded (``redis://:***@host``); it is taken back from
``$COLLECTOR_REDIS_URL`` or the config's ``redis_url`` when one of them masks to the same URL.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import psutil

from runner.core.pidfile import running_pid
from runner.core.runargs import parse_run_options
from runner.core.runnerstate import RunnerLaunch, read_status
from runner.core.usage import UsageError
from runner.ops.liveness import Clocks, healthy_slots
from runner.ops.notify import log_to_runner_log
from scraper.config.collector import (
    CONFIG_ENV,
    REDIS_URL_ENV,
    SPIDER_NAMES,
    ConfigError,
    load_config,
)
from scraper.config.settingtypes import setting_default
from scraper.utils.layout import DataLayout
from scraper.utils.urlmask import is_masked, mask_url

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


def runner_command(recorded: list[str], redis_urls: Iterable[str | None] = ()) -> list[str]:
    """``[this python, -m, runner, options…]`` from a recorded command line, its masked Redis
    password restored from ``redis_urls``; RestartFailed when it is not a runner's ``run``."""
    if len(recorded) < 3 or recorded[1:3] != ["-m", "runner"]:
        raise RestartFailed(f"the recorded command line {' '.join(recorded[:3])!r}… is not "
                            "'python -m runner …': not starting it")
    options = [_unmask(arg, redis_urls) for arg in recorded[3:]]
    try:
        parse_run_options(options)
    except UsageError as exc:
        raise RestartFailed(f"the recorded command line is not a runner run ({exc}): "
                            "not starting it") from None
    return [sys.executable, "-m", "runner", *options]


def _unmask(arg: str, redis_urls: Iterable[str | None]) -> str:
    option, sep, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
    if not is_masked(value):
        return arg
    for url in redis_urls:
        if url and mask_url(url) == value:
            return f"{option}{sep}{url}"
    raise RestartFailed(f"the runner's Redis URL {value} had a password, which is never "
                        "recorded: set $COLLECTOR_REDIS_URL or redis_url in the config")


SAFE_TEXT_SETTINGS = frozenset({"LOG_LEVEL", "USER_AGENT"})


def safe_setting(name: str) -> bool:
    """A Scrapy setting a restarted runner may be handed from a file the watchdog did not
    write: a number or a switch (its default is one), or plain text that names nothing to
    load. Never ``JOBDIR`` (Scrapy unpickles the requests it keeps there), a class path, a
    component map, a feed or a file."""
    default = setting_default(name)
    return name in SAFE_TEXT_SETTINGS or (isinstance(default, (bool, int, float))
                                          and name != "JOBDIR")


def recorded_config(launch: RunnerLaunch, command: list[str]) -> Path | None:
    """The config file the restarted runner will read."""
    named = launch.config
    for index, arg in enumerate(command):
        if arg == "--config" and index + 1 < len(command):
            named = command[index + 1]
        elif arg.startswith("--config="):
            named = arg.partition("=")[2]
    base = Path(launch.cwd or ".")
    if named:
        return base / Path(named).expanduser()
    default = base / "collector.yaml"
    return default if default.is_file() else None


def refuse_unsafe_settings(path: Path | None, environ: dict[str, str]) -> None:
    """RestartFailed when the config names a setting outside :func:`safe_setting`."""
    if path is None:
        return
    try:
        config = load_config(path, environ)
    except ConfigError as exc:
        raise RestartFailed(f"{exc}: not starting it") from None
    for name in SPIDER_NAMES:
        unsafe = sorted(key for key in config.spider(name).settings if not safe_setting(key))
        if unsafe:
            raise RestartFailed(f"{path}: spiders.{name}.settings.{unsafe[0]} is not a setting "
                                "the watchdog starts a runner with (numbers and switches "
                                "only): not starting it")


def start_detached(launch: RunnerLaunch, layout: DataLayout,
                   environ: dict[str, str] | None = None,
                   redis_urls: Iterable[str | None] = ()) -> subprocess.Popen[bytes]:
    """The recorded run in its recorded directory, in a new session, output to runner.log.

    ``environ`` is the old runner's environment when it could still be read; else this
    process's, which under cron is bare: a token must then reach cron (docs/operations.md).
    """
    if not launch.command:
        raise RestartFailed("no command line to restart is recorded")
    cwd = launch.cwd
    if cwd is None or not Path(cwd).is_dir():
        raise RestartFailed(f"the runner's directory {cwd!r} is gone")
    env = dict(environ or os.environ)
    command = runner_command(launch.command, [env.get(REDIS_URL_ENV), *redis_urls])
    refuse_unsafe_settings(recorded_config(launch, command), env)
    if launch.config:
        # The file the runner really read, even if it found it as ./collector.yaml.
        env[CONFIG_ENV] = launch.config
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
    deadline = time.monotonic() + UP_TIMEOUT
    healthy = planned = 0
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            raise RestartFailed(f"the runner exited with status {code}; see {layout.runner_log}")
        status = read_status(layout.status_file)
        if (status is not None and running_pid(layout.runner_pidfile) == process.pid
                and status.runner.pid == process.pid):
            workers = status.workers
            planned = status.runner.planned or len(workers)
            healthy = healthy_slots(workers, process.pid, Clocks.now())
            if healthy >= min(min_workers or planned, planned):
                return healthy
        time.sleep(0.2)
    raise RestartFailed(f"only {healthy}/{planned} workers running after {UP_TIMEOUT:.0f} s "
                        f"(runner pid {process.pid}); see {layout.runner_log}")
