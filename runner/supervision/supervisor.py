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

import errno
import gc
import logging
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runner.core.health import once_summary, round_failed
from runner.core.resolved import write_resolved
from runner.core.runnerstate import (
    ENDED,
    WAITING,
    RunnerLaunch,
    RunnerRecord,
    SlotRecord,
    SlotStatus,
    StatusFile,
    write_launch,
    write_status,
)
from runner.core.usage import PROG
from runner.status.clusterview import box_summary
from runner.status.metrics import MetricsWriter
from runner.supervision.autoscale import AutoscaledPool, cpu_cores
from runner.supervision.catalogschedule import CatalogSchedule
from runner.supervision.exitstatus import describe_exit
from runner.supervision.flownotice import DataFlowNotices
from runner.supervision.interrupt import raise_if_interrupted
from runner.supervision.memoryguard import MemoryGuard
from runner.supervision.plan import Plan, WorkerSlot
from runner.supervision.reload import config_changes, refusal, write_result
from runner.supervision.worker import run_worker
from scraper.addon import use_config
from scraper.budget.limits import identity_for_token, identity_label
from scraper.config.collector import CollectorConfig, ConfigError
from scraper.utils.diskspace import (
    DISK_FULL_EXIT,
    RESUME_FREE_BYTES,
    START_FREE_BYTES,
    DiskReserve,
    free_bytes,
)
from scraper.utils.layout import DataLayout
from scraper.utils.statefile import WorkerRecord, read_worker
from scraper.utils.units import format_size
from scraper.utils.urlmask import mask_url

logger = logging.getLogger("runner")

BACKOFF_START = 1.0
BACKOFF_MAX = 300.0
FAILURES_BEFORE_GIVING_UP = 5
TICK = 1.0
"""The loop wakes at least this often: a stop is never delayed by more than this."""
STATUS_INTERVAL = 2.0
"""Seconds between writes of ``status.json`` (the watchdog judges a runner hung by its age)."""

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


@dataclass
class SlotState:
    """What the supervisor knows of one planned worker."""

    slot: WorkerSlot
    state: SlotStatus = SlotStatus.STARTING
    pid: int | None = None
    rounds: int = 0
    failures: int = 0  # in a row
    restarts: int = 0
    next_start: float = 0.0  # time.monotonic()
    round_pid: int | None = None  # the latest round's worker, kept after it ends
    round_started: float | None = None  # wall clock, shown
    round_started_mono: float | None = None  # time.monotonic(): judges a hung round
    last_exit: str | None = None
    last_error: str | None = None
    items_total: int = 0
    peak_pss_mb: float = 0.0
    outcome: WorkerRecord | None = None  # the latest finished round's record
    retired: bool = False  # dropped from the plan by a reload; its round runs to its end

    def record(self, wall_now: float, mono_now: float) -> SlotRecord:
        waiting = self.state in WAITING
        return SlotRecord(
            spider=self.slot.spider, shard=str(self.slot.shard), slug=self.slot.slug,
            state=self.state, pid=self.pid, round_pid=self.round_pid, rounds=self.rounds,
            failures=self.failures, restarts=self.restarts,
            next_round_at=wall_now + (self.next_start - mono_now) if waiting else None,
            next_round_monotonic=self.next_start if waiting else None,
            round_started_at=self.round_started,
            round_started_monotonic=self.round_started_mono if self.pid else None,
            last_exit=self.last_exit,
            last_error=self.last_error, items_total=self.items_total)


class Supervisor:
    def __init__(self, config: CollectorConfig, plan: Plan, guard: MemoryGuard, *,
                 once: bool, config_path: str | None, command: list[str],
                 redis_url: str | None = None,
                 reread: Callable[[], CollectorConfig] | None = None,
                 replan: Callable[[CollectorConfig], Plan] | None = None) -> None:
        self.config = config
        use_config(config)  # what every worker forked from here runs on
        self.reread = reread
        self.replan = replan
        self.reload_requested = False
        self.plan = plan
        self.guard = guard
        self.once = once
        self.config_path = config_path
        self.command = command
        self.layout = DataLayout(config.data_dir)
        self.slots = [SlotState(slot) for slot in plan.slots]
        self.by_pid: dict[int, SlotState] = {}
        self.stopping = False
        self.force = False
        self.started_at = time.time()  # shown
        self.memory_warned = False
        self.flow = DataFlowNotices()
        self.disk_full_since: float | None = None
        self.reserve = DiskReserve(self.layout.disk_reserve)
        self._last_status: float | None = None  # time.monotonic() of the last write
        self.metrics = MetricsWriter(self.layout, config)
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

    # --- signals -------------------------------------------------------------------------------

    def _install_signals(self) -> None:
        self.wakeup = os.pipe()
        for fd in self.wakeup:
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(self.wakeup[1])
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGHUP, self._on_reload)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd does the waking

    def _on_stop(self, signum: int, frame: Any) -> None:
        if self.stopping and signum == signal.SIGINT:
            self.force = True
        self.stopping = True

    def _on_reload(self, signum: int, frame: Any) -> None:
        self.reload_requested = True

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
        self.reserve.ensure()
        logger.info("%s", self.plan.describe())
        while not self.stopping:
            self._reap()
            if self.reload_requested:
                self._reload()
            if self.once and all(s.state in ENDED for s in self.slots):
                break
            self._start_due()
            self.catalog.tick()
            self._write_status_if_due()
            now = time.monotonic()
            # Due slots that could not start (a turn, memory, disk) are looked at again on the
            # next tick, or sooner when a worker ends (SIGCHLD wakes the loop).
            self._sleep(min([TICK] + [s.next_start - now for s in self.slots
                                      if s.state in WAITING and s.next_start > now]))
        if self.stopping:
            self._stop_workers()
        self.catalog.stop()
        self._write_status(force=True)
        if self.beacon:
            self.beacon.leave(os.getpid(), str(self.config.data_dir))
        code = self._exit_code()
        logger.info("stopped (exit status %d)", code)
        return code

    def _pool(self) -> AutoscaledPool:
        autoscale = self.config.autoscale
        return AutoscaledPool(
            minimum=autoscale.min_concurrency or cpu_cores(),
            maximum=min(autoscale.max_concurrency or self.plan.total, self.plan.total),
            max_used_cpu_ratio=autoscale.max_used_cpu_ratio)

    # --- reload -----------------------------------------------------------------------------------

    def _reload(self) -> None:
        """SIGHUP: read the config file again; see runner/reload.py."""
        self.reload_requested = False
        if self.reread is None or self.replan is None:
            return self._reloaded(False, "reload refused: this runner cannot reload")
        try:
            new = self.reread()
        except ConfigError as exc:
            return self._reloaded(False, f"reload refused: {exc}; the running config stays")
        why = refusal(self.config, new)
        if why:
            return self._reloaded(False, f"reload refused: {why}")
        changes = config_changes(self.config, new)
        if not changes:
            return self._reloaded(True, "reload: the config is unchanged")
        plan = self.replan(new)
        if plan.total == 0:
            return self._reloaded(False, "reload refused: nothing to run with the new config; "
                                         "the running config stays")
        self._replace(new, plan)
        self._reloaded(True, f"reload: {', '.join(changes)} changed; from each worker's next "
                             f"round: {plan.describe()}")

    def _replace(self, config: CollectorConfig, plan: Plan) -> None:
        old_autoscale, old_total = self.config.autoscale, self.plan.total
        self.config = config
        use_config(config)
        self.catalog.interval = config.catalog_interval if self.catalog.enabled else 0.0
        if plan.counts != self.plan.counts:
            kept = {state.slot: state for state in self.slots}
            self.slots = [kept.pop(slot, None) or SlotState(slot) for slot in plan.slots]
            for state in kept.values():  # no longer planned: a running round ends as it is
                state.retired = True
        self.plan = plan
        if config.autoscale != old_autoscale or plan.total != old_total:
            self.pool = self._pool()
        self._write_resolved()

    def _reloaded(self, ok: bool, message: str) -> None:
        (logger.info if ok else logger.error)("%s", message)
        try:
            write_result(self.layout, ok, message)
        except OSError as exc:
            logger.warning("cannot write %s: %s", self.layout.reload_file, exc)

    def _write_resolved(self) -> None:
        try:
            write_resolved(self.layout, self.config)
        except OSError as exc:
            logger.warning("cannot write %s: %s", self.layout.resolved_config, exc)

    def _disk_has_room(self) -> bool:
        """False while the data disk is full; logs the change both ways, once."""
        free = free_bytes(self.layout.root)
        needed = RESUME_FREE_BYTES if self.disk_full_since else START_FREE_BYTES
        if free >= needed:
            if self.disk_full_since:
                logger.warning("disk space is back (%s free): resuming workers",
                               format_size(free))
                self.disk_full_since = None
                self.reserve.ensure()
            return True
        self._disk_full()
        return False

    def _disk_full(self) -> None:
        if self.disk_full_since:
            return
        self.disk_full_since = time.time()  # shown
        self.reserve.release()  # room to write status.json and this log line
        logger.error("disk full: %s has %s free; no new workers until %s are free",
                     self.layout.root, format_size(free_bytes(self.layout.root)),
                     format_size(RESUME_FREE_BYTES))
        self._write_status(force=True)

    def _start_due(self) -> None:
        now = time.monotonic()
        # The longest waiting first: a queued round goes before one that just became due.
        # A spider re-sharded by a reload starts its new shards once its old ones have ended:
        # two shardings of one start list never crawl at once.
        retiring = {s.slot.spider for s in self.by_pid.values() if s.retired}
        due = sorted((s for s in self.slots if s.state in WAITING and s.next_start <= now
                      and s.slot.spider not in retiring), key=lambda s: s.next_start)
        if due and not self._disk_has_room():
            self.pool.update(0, now)  # nothing can start: no reason to grow
            return
        running = len(self.by_pid)
        # Rounds held back by low memory are not waiting for a turn: the pool must not grow on
        # them and then start them all at once when memory is back.
        waiting = 0 if self.guard.low_memory() else max(
            0, len(due) - (self.pool.desired - running))
        turns = max(0, self.pool.update(waiting, now) - running)
        for state in due[turns:]:
            # a crashed one stays restarting
            if state.state in (SlotStatus.STARTING, SlotStatus.SLEEPING):
                state.state = SlotStatus.QUEUED
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
        parent = os.getpid()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            run_worker(state.slot, parent, str(log_path), self.wakeup)
        state.pid = state.round_pid = pid
        state.state = SlotStatus.RUNNING
        state.round_started = time.time()
        state.round_started_mono = time.monotonic()
        self.by_pid[pid] = state

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            state = self.by_pid.pop(pid, None)
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
        ok, how = describe_exit(status)
        state.pid = None
        state.last_exit = how
        worker = read_worker(self.layout.worker_state(state.slot.spider, state.slot.shard))
        if worker and not worker.is_round_of(state.round_pid):
            worker = None
        if worker:
            state.outcome = worker
            state.items_total += worker.items
            state.peak_pss_mb = max(state.peak_pss_mb, worker.pss_mb)
            if worker.last_error:
                state.last_error = worker.last_error
        if state.retired:
            return
        if self.stopping:
            state.state = SlotStatus.STOPPED
            return
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == DISK_FULL_EXIT:
            # Not the worker's fault: wait for space, then run the round again.
            state.state = SlotStatus.DISK_FULL
            state.last_error = "disk full"
            state.next_start = time.monotonic()
            self._disk_full()
            return
        if ok:
            self.flow.round_ended(state.slot.spider, str(state.slot.shard), worker)
            state.rounds += 1
            state.failures = 0
            state.state = SlotStatus.DONE if self.once else SlotStatus.SLEEPING
            state.next_start = (time.monotonic()
                                + self.config.round_interval_of(state.slot.spider))
            self._record_memory()
            return
        state.failures += 1
        state.last_error = f"{how}" + (f"; {state.last_error}" if state.last_error else "")
        if state.failures >= FAILURES_BEFORE_GIVING_UP:
            state.state = SlotStatus.FAILED
            logger.error("%s %s failed %d times in a row (%s): giving up on it",
                         state.slot.spider, state.slot.shard, state.failures, how)
            return
        delay = min(BACKOFF_MAX, BACKOFF_START * 2 ** (state.failures - 1))
        state.state = SlotStatus.RESTARTING
        state.restarts += 1
        state.next_start = time.monotonic() + delay
        logger.warning("%s %s ended (%s); restarting in %.0f s", state.slot.spider,
                       state.slot.shard, how, delay)

    def _record_memory(self) -> None:
        samples = [int(s.peak_pss_mb * 1024 * 1024) for s in self.slots if s.peak_pss_mb]
        if len(samples) == len(self.slots):
            self.guard.record_worker_pss(samples)

    # --- stopping ---------------------------------------------------------------------------------

    def _stop_workers(self) -> None:
        logger.info("stopping: SIGTERM to %d workers", len(self.by_pid))
        self._write_status(force=True)
        self._signal_all(signal.SIGTERM)
        deadline = time.monotonic() + self.config.stop_timeout
        while self.by_pid and time.monotonic() < deadline and not self.force:
            self._reap()
            self._sleep(min(0.2, max(0.0, deadline - time.monotonic())))
        if self.by_pid:
            logger.warning("SIGKILL to %d workers still running", len(self.by_pid))
            self._signal_all(signal.SIGKILL)
            while self.by_pid:
                try:
                    pid, status = os.waitpid(-1, 0)
                except ChildProcessError:
                    break
                state = self.by_pid.pop(pid, None)
                if state:
                    self._finished(state, status)
                else:
                    self.catalog.reaped(pid, status)
        for state in self.slots:
            if state.state not in ENDED:
                state.state = SlotStatus.STOPPED

    def _signal_all(self, sig: int) -> None:
        for pid in list(self.by_pid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
            except OSError as exc:
                if exc.errno != errno.ESRCH:
                    raise

    def _exit_code(self) -> int:
        """0, except for a ``--once`` run that was stopped, or in which any worker's round
        failed or fetched nothing: that is 1, after one summary line per spider."""
        if not self.once:
            return 0
        problems: dict[str, list[str]] = {}
        for s in self.slots:
            problem = round_failed(s.outcome) if s.state == SlotStatus.DONE else (
                s.last_error or s.last_exit or s.state)
            mine = problems.setdefault(s.slot.spider, [])
            if problem:
                mine.append(f"shard {s.slot.shard} {problem}")
                print(f"failed: {s.slot.spider} {s.slot.shard}: {problem}", file=sys.stderr)
        for spider, mine in problems.items():
            records = [s.outcome for s in self.slots if s.slot.spider == spider]
            print(once_summary(spider, records, mine), flush=True)
        if self.stopping:
            print(f"{PROG}: stopped before every round ended", file=sys.stderr)
            return 1
        return 1 if any(problems.values()) else 0

    # --- status -----------------------------------------------------------------------------------

    def _write_status_if_due(self) -> None:
        if self._last_status is None or time.monotonic() - self._last_status >= STATUS_INTERVAL:
            self._write_status()

    def _beacon_record(self) -> dict[str, Any]:
        states: dict[str, int] = {}
        for slot in self.slots:
            states[slot.state] = states.get(slot.state, 0) + 1
        return {"pid": os.getpid(), "started_at": self.started_at, "plan": self.plan.describe(),
                "planned": self.plan.total, "states": states, "once": self.once,
                "stopping": self.stopping, "data_dir": str(self.config.data_dir),
                **box_summary([s.record(time.time(), time.monotonic()) for s in self.slots],
                              self.disk_full_since)}

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
            disk_full_since=self.disk_full_since,
            # Distributed mode: which Redis (status connects with its own URL) and whether it
            # answers.
            redis_url=mask_url(self.redis_url) if self.redis_url else None,
            redis=self.beacon.state if self.beacon else None,
            concurrency=self.pool.desired, concurrency_range=[self.pool.minimum,
                                                              self.pool.maximum],
            cpu_ratio=self.pool.cpu_ratio, github_identity=self.github_identity)
        return StatusFile(runner, [state.record(wall, mono) for state in self.slots])

    def _write_status(self, force: bool = False) -> None:
        self._last_status = time.monotonic()
        if self.beacon:
            self.beacon.beat(self._beacon_record(), force=force)
        try:
            write_status(self.layout.status_file, self.status_record())
        except OSError as exc:
            logger.warning("cannot write status: %s", exc)
        self.metrics.write()
