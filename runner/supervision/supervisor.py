"""The supervisor: pre-forks workers, runs their rounds, restarts what dies, stops cleanly.

Memory is what limits a 2 GB box, so the runner imports Scrapy, Twisted, lxml and the project
once, freezes that heap (``gc.freeze()``, so the children's garbage collector never touches the
shared pages and copy-on-write keeps them shared), then forks each worker. A worker runs one
round and exits; the next round is a fresh fork after ``round_interval``: weeks of running don't
accumulate leaks. The parent never starts a reactor, thread or socket.

Every interval, timeout and backoff is on ``time.monotonic()``, so a clock stepped back or forward
(NTP, a suspended VM) neither stalls the rounds nor fires them early; wall-clock time is only
what ``status.json`` shows and stores.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import logging
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from runner.core.health import once_summary, round_failed
from runner.core.resolved import write_resolved
from runner.core.runnerstate import (
    RunnerLaunch,
    RunnerRecord,
    SlotStatus,
    StatusFile,
    write_launch,
)
from runner.core.usage import INTERRUPTED, PROG
from runner.status.clusterview import box_summary
from runner.status.metrics import MetricsWriter
from runner.supervision.autoscale import AutoscaledPool, cpu_cores
from runner.supervision.catalogschedule import CatalogSchedule
from runner.supervision.diskgate import DiskGate
from runner.supervision.flownotice import DataFlowNotices
from runner.supervision.interrupt import raise_if_interrupted
from runner.supervision.memoryguard import MemoryGuard
from runner.supervision.plan import Plan
from runner.supervision.reloader import ConfigReloader
from runner.supervision.slottable import RoundEnd, SlotState, SlotTable
from runner.supervision.statuswriter import StatusWriter
from runner.supervision.worker import run_worker
from scraper.addon import use_config
from scraper.budget.limits import identity_for_token, identity_label
from scraper.config.collector import SPIDER_NAMES, CollectorConfig
from scraper.utils.diskspace import DISK_FULL_EXIT
from scraper.utils.layout import DataLayout
from scraper.utils.logtail import last_failure
from scraper.utils.outcome import NOTHING_FETCHED_EXIT
from scraper.utils.statefile import read_worker
from scraper.utils.units import counted
from scraper.utils.urlmask import mask_url

logger = logging.getLogger("runner")

TICK = 1.0
"""The loop wakes at least this often: a stop is never delayed by more than this."""
EXPECTED_EXITS = (0, NOTHING_FETCHED_EXIT, DISK_FULL_EXIT)
"""Exit statuses that end a round as planned (health and the disk gate judge them): no crash
to explain."""

PRELOAD_MODULES = (
    "scrapy.cmdline", "scrapy.crawler", "scrapy.core.engine", "scrapy.core.scheduler",
    "scrapy.core.downloader.handlers.http11", "scrapy.http", "scrapy.selector",
    "scrapy.linkextractors", "scrapy.downloadermiddlewares.retry",
    "scrapy.downloadermiddlewares.robotstxt", "scrapy.extensions.throttle",
    "scrapy.pipelines", "scrapy.spidermiddlewares.depth", "twisted.internet.asyncioreactor",
    "twisted.web.client", "lxml.html", "parsel", "protego", "sqlite3", "psutil",
    "scraper.settings", "spiders.trending", "spiders.search", "spiders.docs",
    "pipelines.itemstore", "scraper.dedup.deltafetch",
    "scraper.downloadermiddlewares.githubauth", "scraper.extensions.workerstate",
    "scraper.extensions.logrotate", "scraper.commands.crawl", "scraper.budget.store",
    "scraper.budget.middleware", "scraper.spidermiddlewares.sitecap",
    "scraper.extensions.summary", "scraper.stores.merge", "scraper.dedup.sqliteurls",
    "scraper.dedup.sqlitehashes", "scraper.budget.sqlitebudget",
    "scraper.budget.sqliteetags", "scraper.slicing.sqliteplans",
)


DISTRIBUTED_MODULES = (
    "redis", "scrapy_redis.scheduler", "scrapy_redis.spiders", "scraper.cluster.spider",
    "scraper.cluster.scheduler", "scraper.cluster.dupefilter",
    "scraper.dedup.redishashes", "scraper.dedup.redisurls",
    "scraper.budget.redisbudget", "scraper.budget.redisetags", "scraper.slicing.redisplans",
    "scraper.cluster.heartbeat", "scraper.cluster.registry",
)
"""Preloaded too in the distributed mode (``--redis-url``): what every worker then imports."""


def preload(extra: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """Import everything a worker needs and do what it does at start, once, then freeze it for
    copy-on-write sharing (see :mod:`runner.supervision.preload`). Returns the versions a worker
    runs."""
    import importlib

    from runner.supervision.preload import (
        cache_abstract_collection_checks,
        cache_command_class_checks,
        command_modules,
        component_modules,
        import_all,
        read_distribution_metadata,
        settle_interned_strings,
    )

    for name in PRELOAD_MODULES + extra:
        importlib.import_module(name)
    import_all(component_modules())
    commands = import_all(command_modules())
    versions = read_distribution_metadata()
    cache_abstract_collection_checks()
    cache_command_class_checks(commands)
    assert "twisted.internet.reactor" not in sys.modules, "a reactor exists before fork"
    gc.collect()
    settle_interned_strings()  # after the collection: garbage's strings are not alive
    gc.freeze()
    return versions


class Supervisor:
    def __init__(self, config: CollectorConfig, plan: Plan, guard: MemoryGuard, *,
                 once: bool, config_path: str | None, command: list[str],
                 redis_url: str | None = None,
                 reread: Callable[[], CollectorConfig] | None = None,
                 replan: Callable[[CollectorConfig], Plan] | None = None) -> None:
        self.config = config
        use_config(config)  # what every worker forked from here runs on
        self.plan = plan
        self.guard = guard
        self.once = once
        self.config_path = config_path
        self.command = command
        self.layout = DataLayout(config.data_dir)
        self.reloader = ConfigReloader(self.layout, reread, replan, wake=self._wake)
        self.table = SlotTable(plan)
        self.stopping = False
        self.force = False
        self.started_at = time.time()  # shown
        self.memory_warned = False
        self.flow = DataFlowNotices()
        self.disk = DiskGate(self.layout, on_full=lambda: self.status.write(force=True),
                             once=once)
        self.catalog = CatalogSchedule(config, str(self.layout.resolved_config),
                                       enabled=not once)
        self.pool = self._pool()
        # Distributed mode: this runner's heartbeat in Redis (connects per beat: no socket may
        # be open in the parent when it forks).
        self.redis_url = redis_url
        self.beacon = None
        if redis_url:
            from scraper.cluster.registry import RunnerBeacon

            self.beacon = RunnerBeacon(redis_url)
        self.status = StatusWriter(self.layout, self.status_record,
                                   MetricsWriter(self.layout, config), self.beacon,
                                   self._beacon_record, on_disk_full=self.disk.mark_full)

    # --- signals -------------------------------------------------------------------------------

    def _install_signals(self) -> None:
        self.wakeup = os.pipe()
        for fd in self.wakeup:
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(self.wakeup[1])
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGHUP, lambda *_: self.reloader.request())
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd does the waking

    def _on_stop(self, signum: int, frame: Any) -> None:
        if self.stopping and signum == signal.SIGINT:
            self.force = True
        self.stopping = True

    def _wake(self) -> None:
        # No loop yet, or the pipe is full: it wakes anyway.
        with contextlib.suppress(AttributeError, OSError):
            os.write(self.wakeup[1], b"\0")

    def _sleep(self, seconds: float) -> None:
        try:
            ready, _, _ = select.select([self.wakeup[0]], [], [], max(0.0, seconds))
        except InterruptedError:
            return
        if ready:
            try:
                while os.read(self.wakeup[0], 512):
                    pass
            except BlockingIOError:
                pass

    # --- main loop ------------------------------------------------------------------------------

    def run(self) -> int:
        self._install_signals()
        raise_if_interrupted()  # a Ctrl-C during the start whose exception something swallowed
        self._write_launch()
        self._write_resolved()
        self.disk.reserve.ensure()
        logger.info("%s", self.plan.describe())
        self._close_idle_segments(frozenset(slot.slug for slot in self.plan.slots))
        while not self.stopping:
            self._reap()
            change = self.reloader.poll(self.config)
            if change is not None:
                self._replace(*change)
            if self.once and (self.table.all_ended()
                              or (self.disk.full_since and not self.table.running)):
                break  # a --once run waits for no space: its rounds go again next run
            if not self.reloader.reading:
                self._start_due()
            self.catalog.tick()
            self.status.write_if_due()
            # Due slots that could not start (a turn, memory, disk) are looked at again on the
            # next tick, or sooner when a worker ends (SIGCHLD wakes the loop).
            self._sleep(self.table.next_due_in(time.monotonic(), TICK))
        if self.stopping:
            self._stop_workers()
            self._close_idle_segments(frozenset())
        self.catalog.stop()
        self.status.write(force=True)
        if self.beacon:
            self.beacon.leave(os.getpid(), str(self.config.data_dir))
        code = INTERRUPTED if self.force else self._exit_code()
        logger.info("stopped (exit status %d)", code)
        return code

    def _pool(self) -> AutoscaledPool:
        autoscale = self.config.autoscale
        return AutoscaledPool(
            minimum=autoscale.min_concurrency or cpu_cores(),
            maximum=min(autoscale.max_concurrency or self.plan.total, self.plan.total),
            max_used_cpu_ratio=autoscale.max_used_cpu_ratio)

    # --- reload -----------------------------------------------------------------------------------

    def _replace(self, config: CollectorConfig, plan: Plan) -> None:
        old_autoscale, old_total = self.config.autoscale, self.plan.total
        self.config = config
        use_config(config)
        self.catalog.interval = config.catalog_interval if self.catalog.enabled else 0.0
        if plan.counts != self.plan.counts:
            self.table.replan(plan)
        self.plan = plan
        if config.autoscale != old_autoscale or plan.total != old_total:
            self.pool = self._pool()
        self._write_resolved()

    def _write_resolved(self) -> None:
        try:
            write_resolved(self.layout, self.config)
        except OSError as exc:
            logger.warning("cannot write %s: %s", self.layout.resolved_config, exc)

    def _start_due(self) -> None:
        now = time.monotonic()
        due = self.table.due(now)
        if due and not self.disk.has_room():
            self.pool.update(0, now)  # nothing can start: no reason to grow
            return
        running = self.table.running
        # Rounds held back by low memory are not waiting for a turn: the pool must not grow on
        # them and then start them all at once when memory is back.
        waiting = 0 if self.guard.low_memory() else max(
            0, len(due) - (self.pool.desired - running))
        turns = max(0, self.pool.update(waiting, now) - running)
        self.table.queue(due[turns:])
        for state in due[:turns]:
            if self.guard.low_memory():
                if not self.memory_warned:
                    logger.warning("available memory below 10%% of the budget: delaying new "
                                   "workers until it recovers")
                    self.memory_warned = True
                return
            self.memory_warned = False
            self._fork(state)

    def _fork(self, state: SlotState) -> None:
        log_path = self.layout.log_file(state.slot.spider, state.slot.shard)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            log_offset = log_path.stat().st_size
        except OSError:
            log_offset = 0
        parent = os.getpid()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            run_worker(state.slot, parent, str(log_path), self.wakeup)
        self.table.started(state, pid, log_offset)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            state = self.table.take(pid)
            if state is not None:
                self._finished(state, status)
                # What a round leaves in reference cycles only a full collection frees, and
                # the parent's come rarely on their own: CPython waits for a quarter as many
                # objects as the last full collection kept, which here was the whole heap
                # just before it was frozen. Cheap: the frozen heap is not traversed.
                gc.collect()
            else:
                self.catalog.reaped(pid, status)

    def _finished(self, state: SlotState, status: int) -> None:
        worker = read_worker(self.layout.worker_state(state.slot.spider, state.slot.shard))
        if worker and not worker.is_round_of(state.round_pid):
            worker = None
        end = self.table.finish(state, status, worker, stopping=self.stopping, once=self.once,
                                config=self.config, cause=self._failure(state, status))
        if end is RoundEnd.DISK_FULL:
            self.disk.mark_full()
        elif end is RoundEnd.SUCCEEDED:
            self.flow.round_ended(state.slot.spider, str(state.slot.shard), worker)
            self._record_memory()

    def _failure(self, state: SlotState, status: int) -> str | None:
        """Why a worker that exited with a failing status failed, from its log: a crash before
        its round could record anything is otherwise only "exit 1"."""
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) in EXPECTED_EXITS:
            return None
        return last_failure(self.layout.log_file(state.slot.spider, state.slot.shard),
                            state.log_offset)

    def _record_memory(self) -> None:
        samples = self.table.measured_peaks()
        if samples is not None:
            self.guard.record_worker_pss(samples)

    # --- stopping ---------------------------------------------------------------------------------

    def _stop_workers(self) -> None:
        logger.info("stopping: SIGTERM to %d workers", self.table.running)
        self.status.write(force=True)
        self._signal_all(signal.SIGTERM)
        deadline = time.monotonic() + self.config.stop_timeout
        while self.table.running and time.monotonic() < deadline and not self.force:
            self._reap()
            self._sleep(min(0.2, max(0.0, deadline - time.monotonic())))
        if self.table.running:
            if self.force:  # asked for at the terminal: one plain line there, not a log line
                logger.info("second Ctrl-C: SIGKILL to %d workers still running",
                            self.table.running)
                print(f"{PROG}: interrupted again: killing "
                      f"{counted(self.table.running, 'worker')}", file=sys.stderr, flush=True)
            else:
                logger.warning("SIGKILL to %d workers still running", self.table.running)
            self._signal_all(signal.SIGKILL)
            while self.table.running:
                try:
                    pid, status = os.waitpid(-1, 0)
                except ChildProcessError:
                    break
                state = self.table.take(pid)
                if state:
                    self._finished(state, status)
                else:
                    self.catalog.reaped(pid, status)
        self.table.stop_rest()

    def _close_idle_segments(self, keep: frozenset[str]) -> None:
        """Close the open segments of every shard not in ``keep`` that no process holds: a
        shard of an earlier plan or a hand-run crawl leaves none open, and a stop leaves its
        lines in closed files (a live crawl's segment is left alone)."""
        # Imported when used: the preloaded parent (its interned-string table sized by the
        # preload) stays as it was.
        from pipelines.idlesegments import close_idle_segments

        settings = {name: self.config.spider(name).settings for name in SPIDER_NAMES}
        closed = close_idle_segments(self.layout, settings, keep=keep, now=time.time())
        if closed:
            logger.info("closed %s no process writes", counted(len(closed), "open segment"))

    def _signal_all(self, sig: int) -> None:
        for pid in list(self.table.by_pid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
            except OSError as exc:
                if exc.errno != errno.ESRCH:
                    raise

    def _exit_code(self) -> int:
        """0, except for a ``--once`` run that was stopped, or in which any worker's round
        failed or fetched nothing: that is 1, after one summary line per spider; one the data
        disk filled in is ``DISK_FULL_EXIT`` (the disk gate's line said it)."""
        if not self.once:
            return 0
        disk_full = self.disk.full_since is not None
        problems: dict[str, list[str]] = {}
        for s in self.table.slots:
            problem = round_failed(s.outcome) if s.state == SlotStatus.DONE else (
                s.last_error or s.last_exit or s.state)
            mine = problems.setdefault(s.slot.spider, [])
            if problem:
                mine.append(f"shard {s.slot.shard} {problem}")
                if not disk_full:
                    print(f"failed: {s.slot.spider} {s.slot.shard}: {problem}",
                          file=sys.stderr)
        for spider, mine in problems.items():
            records = [s.outcome for s in self.table.slots if s.slot.spider == spider]
            print(once_summary(spider, records, mine), flush=True)
        if disk_full:
            return DISK_FULL_EXIT
        if self.stopping:
            print(f"{PROG}: stopped before every round ended", file=sys.stderr)
            return 1
        return 1 if any(problems.values()) else 0

    # --- status -----------------------------------------------------------------------------------

    def _beacon_record(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "started_at": self.started_at, "plan": self.plan.describe(),
                "planned": self.plan.total, "states": self.table.state_counts(),
                "once": self.once, "stopping": self.stopping,
                "data_dir": str(self.config.data_dir),
                **box_summary(self.table.records(time.time(), time.monotonic()),
                              self.disk.full_since)}

    def _launch(self) -> RunnerLaunch:
        return RunnerLaunch(command=self.command, cwd=os.getcwd(), config=self.config_path,
                            once=self.once)

    def _write_launch(self) -> None:
        try:
            write_launch(self.layout.runner_launch, self._launch())
        except OSError as exc:
            logger.warning("cannot write %s: %s", self.layout.runner_launch, exc)

    @property
    def github_identity(self) -> str:
        """The label of the identity the workers' GitHub requests go out as."""
        token = self.config.github.token
        return identity_label(identity_for_token(token.reveal() if token else None))

    def status_record(self) -> StatusFile:
        wall, mono = time.time(), time.monotonic()
        launch = self._launch()
        runner = RunnerRecord(
            pid=os.getpid(), started_at=self.started_at, updated_at=wall,
            updated_monotonic=mono, state="stopping" if self.stopping else "running",
            command=launch.command, cwd=launch.cwd, config=launch.config,
            data_dir=str(self.config.data_dir), plan=self.plan.describe(),
            planned=self.plan.total, round_interval=self.config.shortest_round_interval,
            once=self.once, memory_budget=self.guard.budget,
            disk_full_since=self.disk.full_since,
            # Distributed mode: which Redis (status connects with its own URL) and whether it
            # answers.
            redis_url=mask_url(self.redis_url) if self.redis_url else None,
            redis=self.beacon.state if self.beacon else None,
            concurrency=self.pool.desired, concurrency_range=[self.pool.minimum,
                                                              self.pool.maximum],
            cpu_ratio=self.pool.cpu_ratio, github_identity=self.github_identity)
        return StatusFile(runner, self.table.records(wall, mono))
