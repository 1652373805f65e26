"""``python -m runner watchdog [--min-workers N]``: silent while healthy, else restart the runner.

Cron runs it every five minutes (``scripts/watchdog.sh``) and mails whatever it prints, so a
healthy collector prints nothing. Healthy means running *and* collecting: see "Outcome" below.
It reads the runner's pidfile (the lock is the truth about whether a runner is alive) and
``state/status.json``, and asks psutil about the processes.

Whether the processes are alive is :mod:`runner.ops.liveness`'s rule (N healthy slots; default:
all the plan's). A live runner is stopped first (SIGTERM, SIGKILL after ``stop_timeout`` + 5 s),
then the command line recorded in ``state/runner-command.json`` (only ever a ``python -m
runner`` run, see :mod:`runner.ops.restart`) is started again in its own session, in its
recorded directory, with its output appended to ``logs/runner.log``. Exactly two lines are
printed::

    collector down: 12/20 workers (runner pid 4242 alive); restarting
    collector restarted: 20 workers

Outcome: with its processes fine, the collector is judged by what its rounds produce
(:mod:`runner.core.health`). A spider whose shards all fetched nothing for ``health.failed_rounds``
rounds, or whose listing pages parse to zero rows, gets one line when it begins and one when it
ends; the spiders already reported are remembered in ``state/health.json``, so nothing is said
while it persists. A restart cannot cure those (a DNS failure, a markup change), so none is
made; a hung worker (a round longer than ``health.max_round``) is restarted::

    collector unhealthy: docs 2/2 shards fetched nothing in 3 rounds (DNS lookup failed: …)
    collector recovered: docs

A spider-shard whose rounds still get data but moved away from its last days (half a list's
rows gone: :mod:`scraper.utils.roundhistory`) gets the same pair of lines, remembered alike::

    collector unusual: trending 0/1: trending?since=daily: 12 rows, median 25
    collector usual again: trending 0/1
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import replace

from runner.core.argtypes import add_min_workers
from runner.core.growth import outlook
from runner.core.health import ShardHealth, shard_health, unhealthy_spiders
from runner.core.pidfile import running_pid
from runner.core.resolved import run_config
from runner.core.runnerstate import (
    RunnerLaunch,
    StatusFile,
    read_health_memory,
    read_launch,
    read_status,
    write_health_memory,
)
from runner.core.usage import PROG, TROUBLE, usage_error
from runner.ops.liveness import CONFIRM_TIMEOUT, Clocks, Verdict, assess, next_status
from runner.ops.notify import log_to_runner_log, say
from runner.ops.restart import (
    RestartFailed,
    runner_environment,
    start_detached,
    stop_runner,
    wait_until_up,
)
from scraper.config.collector import CollectorConfig
from scraper.settings import REDIS_KEY_PREFIX
from scraper.utils.layout import DataLayout
from scraper.utils.pidlock import exclusive_or_skip
from scraper.utils.statefile import read_worker
from scraper.utils.units import counted, format_size


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = "Print nothing while the collector is healthy; else restart it."
    add_config_option(parser)
    add_min_workers(parser, "healthy worker slots required (default: all the plan's)")
    parser.add_argument("--cluster", action="store_true",
                        help="distributed mode: also say once when another box stops "
                             "heartbeating")
    parser.add_argument("--cluster-only", action="store_true",
                        help="only that (systemd restarts this box's runner)")
    parser.set_defaults(handler=cmd_watchdog)


# --- the command ----------------------------------------------------------------------------------


def cmd_watchdog(args: argparse.Namespace, config: CollectorConfig) -> int:
    cluster_only = getattr(args, "cluster_only", False)
    if getattr(args, "cluster", False) or cluster_only:
        if not config.redis_url:
            return usage_error("watchdog --cluster: no redis_url in the config (or "
                               "$COLLECTOR_REDIS_URL): this box is in no cluster")
        from runner.ops.clusterwatch import watch_cluster

        layout = DataLayout(config.data_dir)
        for line in watch_cluster(config.redis_url, REDIS_KEY_PREFIX, layout.state_dir,
                                  str(config.data_dir)):
            print(line, flush=True)
        if cluster_only:
            return 0
    return _watch_box(args, config)


def _watch_box(args: argparse.Namespace, config: CollectorConfig) -> int:
    config = run_config(config)  # the running runner's thresholds, not an unreloaded edit's
    layout = DataLayout(config.data_dir)
    status = read_status(layout.status_file)
    # How to start the runner again: its own record, else (a runner older than that record)
    # the status; a damaged status.json must not stop the restart of a dead runner.
    launch = read_launch(layout.runner_launch) or (
        status.runner.launch() if status is not None and status.runner.command else None)
    if launch is None:
        if not layout.status_file.exists():
            print(f"no runner has ever run on {config.data_dir} (no {layout.status_file.name}), "
                  f"so the watchdog cannot know its command line: start it once with "
                  f"'{PROG} --workers N'")
            return TROUBLE
        return usage_error(f"watchdog: cannot read {layout.status_file}")
    try:
        with exclusive_or_skip(layout.watchdog_lock) as mine:
            if not mine:
                return 0  # another watchdog run is on it
            _judge_disk(layout, config)
            return _check(status, launch, layout, config, args.min_workers)
    except OSError as exc:
        return usage_error(f"watchdog: {exc}")


def _check(status: StatusFile | None, launch: RunnerLaunch, layout: DataLayout,
           config: CollectorConfig, min_workers: int | None) -> int:
    lock_pid = running_pid(layout.runner_pidfile)
    if lock_pid is None and layout.stopped_mark.exists():
        return 0  # stopped on purpose (`runner stop`): nothing to say until it is started
    if launch.once:
        if lock_pid is not None:
            return 0  # a one-off round: not the watchdog's to judge
        print(f"the last runner on {config.data_dir} was a --once run, which the watchdog does "
              f"not restart: start the collector with '{PROG} --workers N'")
        return TROUBLE
    if status is None:
        if lock_pid is not None:
            # Alive, so it rewrites the file every 2 s: judge it on the next one.
            status = next_status(layout, StatusFile(), CONFIRM_TIMEOUT)
            if status.runner.pid is None:
                print(f"{PROG}: watchdog: runner pid {lock_pid} is alive but "
                      f"{layout.status_file} is unreadable", file=sys.stderr)
                return TROUBLE
        else:
            status = StatusFile()
    verdict = assess(status, lock_pid, min_workers, Clocks.now())
    if verdict.kind == "degraded":
        # Confirm on the next status the runner writes (every 2 s). Until then a worker that has
        # just ended is still "running" with a pid that is gone, and one that crashed is being
        # restarted by the runner: neither is a reason to restart everything.
        status = next_status(layout, status, CONFIRM_TIMEOUT)
        verdict = assess(status, running_pid(layout.runner_pidfile), min_workers, Clocks.now(),
                         earlier=verdict.problems)
    if verdict.ok:
        if verdict.kind == "healthy":
            return _judge_outcome(status, launch, layout, config, verdict, min_workers)
        return 0
    return _restart(verdict, launch, layout, config, min_workers)


def _judge_outcome(status: StatusFile, launch: RunnerLaunch, layout: DataLayout,
                   config: CollectorConfig, verdict: Verdict, min_workers: int | None) -> int:
    """Say once when a spider's unhealth begins and once when it ends; restart for a hang."""
    mono = time.monotonic()
    shards = [shard_health(slot, read_worker(layout.worker_state_of(slot.slug)),
                           config.health, config.round_interval_of(slot.spider), mono)
              for slot in status.workers]
    current = unhealthy_spiders(shards, config.health.failed_rounds)
    memory = read_health_memory(layout.health_memory)
    # New, or a new kind of unhealth (failing, then hung): said once, and a hang restarts.
    changed = [(kind, reason) for spider, (kind, reason) in current.items()
               if memory.reported.get(spider) != kind]
    begun = [reason for _, reason in changed]
    ended = [spider for spider in memory.reported if spider not in current]
    hung = any(kind == "hung" for kind, _ in changed)
    write_health_memory(layout.health_memory, replace(
        memory, reported={spider: kind for spider, (kind, _) in current.items()}))
    _judge_unusual(status, layout, config, shards)
    if ended:
        _say_and_log(config, layout, logging.INFO, f"collector recovered: {', '.join(ended)}")
    if hung:
        line = f"collector unhealthy: {'; '.join(begun)}; restarting"
        return _restart(verdict, launch, layout, config, min_workers, line)
    if begun:
        _say_and_log(config, layout, logging.WARNING,
                     f"collector unhealthy: {'; '.join(begun)}")
    return 0


def _judge_unusual(status: StatusFile, layout: DataLayout, config: CollectorConfig,
                   shards: list[ShardHealth]) -> None:
    """One line when spider-shards' rounds turn unusual against their last days, one when they
    are usual again; a shard that health already reports is left to health's line."""
    records = {slot.slug: read_worker(layout.worker_state_of(slot.slug))
               for slot in status.workers}
    labels = {slot.slug: f"{slot.spider} {slot.shard}" for slot in status.workers}
    unhealthy = {f"{shard.spider} {shard.shard}" for shard in shards if shard.unhealthy}
    current = {slug: record.unusual for slug, record in records.items()
               if record is not None and record.unusual}
    memory = read_health_memory(layout.health_memory)
    begun = [f"{labels[slug]}: {reason}" for slug, reason in current.items()
             if slug not in memory.unusual and labels[slug] not in unhealthy]
    ended = [labels.get(slug, slug) for slug in memory.unusual if slug not in current]
    reported = [slug for slug in memory.unusual if slug in current] + [
        slug for slug in current if slug not in memory.unusual and labels[slug] not in unhealthy]
    if reported != memory.unusual:
        write_health_memory(layout.health_memory, replace(memory, unusual=reported))
    if ended:
        _say_and_log(config, layout, logging.INFO, f"collector usual again: {', '.join(ended)}")
    if begun:
        _say_and_log(config, layout, logging.WARNING,
                     f"collector unusual: {'; '.join(begun)}")


def _judge_disk(layout: DataLayout, config: CollectorConfig) -> None:
    """One line when the data disk will be full within ``health.disk_days_left`` days at the
    measured growth, and nothing more until it is no longer so."""
    limit = config.health.disk_days_left
    if not limit or not layout.root.is_dir():
        return
    disk = outlook(layout)
    low = disk.days_left is not None and disk.days_left < limit
    memory = read_health_memory(layout.health_memory)
    if low == memory.disk_warned:
        return
    write_health_memory(layout.health_memory, replace(memory, disk_warned=low))
    if low:
        assert disk.per_day is not None and disk.free_bytes is not None
        _say_and_log(config, layout, logging.WARNING,
                     f"collector disk: full in {disk.days_left:.1f} days ("
                     f"{format_size(disk.free_bytes)} free, data grows "
                     f"{format_size(int(disk.per_day))}/day)")


def _say_and_log(config: CollectorConfig, layout: DataLayout, level: int, line: str) -> None:
    say(config, line)
    log_to_runner_log(layout, "runner.watchdog", level, line)


def _restart(verdict: Verdict, launch: RunnerLaunch, layout: DataLayout,
             config: CollectorConfig, min_workers: int | None, line: str | None = None) -> int:
    line = line or verdict.down_line()
    say(config, line)
    log_to_runner_log(layout, "runner.watchdog", logging.WARNING,
                      f"{line}: {' '.join(launch.command)}")
    try:
        environ = None
        if verdict.runner_pid is not None:
            environ = runner_environment(verdict.runner_pid)
            stop_runner(verdict.runner_pid, layout, config.stop_timeout)
        process = start_detached(launch, layout, environ, [config.redis_url])
        healthy = wait_until_up(process, layout, min_workers)
    except RestartFailed as exc:
        line = f"collector restart failed: {exc}"
        code = TROUBLE
    else:
        line = f"collector restarted: {counted(healthy, 'worker')}"
        code = 0
    say(config, line)
    log_to_runner_log(layout, "runner.watchdog", logging.INFO if code == 0 else logging.ERROR,
                      line)
    return code
