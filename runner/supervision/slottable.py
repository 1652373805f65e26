"""The slot table: one entry a planned worker, and the state machine its rounds drive.

A slot is one spider-shard of the plan. It waits (starting, sleeping between rounds,
restarting after a crash, held by a full disk, queued for a turn in the pool), runs one round
at a time, and ends (``done`` after a ``--once`` round, ``failed`` after too many crashes in a
row, ``stopped`` by the runner's stop). The table answers what the loop asks of the slots —
which are due, which run, when the next is due — and moves a slot on when its round ends; the
loop does the forking, reaping and signalling.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from enum import Enum

from runner.core.runnerstate import ENDED, WAITING, SlotRecord, SlotStatus
from runner.supervision.exitstatus import describe_exit
from runner.supervision.plan import Plan, WorkerSlot
from scraper.config.collector import CollectorConfig
from scraper.utils.diskspace import DISK_FULL_EXIT
from scraper.utils.statefile import WorkerRecord

logger = logging.getLogger("runner")

BACKOFF_START = 1.0
BACKOFF_MAX = 300.0
FAILURES_BEFORE_GIVING_UP = 5


class RoundEnd(Enum):
    """What became of a slot whose round ended: what the loop does next depends on it."""

    RETIRED = "retired"  # dropped from the plan by a reload: nothing more
    STOPPED = "stopped"  # the runner is stopping
    DISK_FULL = "disk_full"  # runs again once there is space
    SUCCEEDED = "succeeded"  # sleeps until its next round (or is done, with --once)
    RESTARTING = "restarting"  # crashed: runs again after a backoff
    GAVE_UP = "gave_up"  # crashed too often in a row: failed for good


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
    log_offset: int = 0  # the worker log's size when the round started: its lines are after
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


class SlotTable:
    """The plan's slots, in plan order, and the running ones by worker pid."""

    def __init__(self, plan: Plan) -> None:
        self.slots = [SlotState(slot) for slot in plan.slots]
        self.by_pid: dict[int, SlotState] = {}

    # --- queries ----------------------------------------------------------------------------------

    @property
    def running(self) -> int:
        return len(self.by_pid)

    def all_ended(self) -> bool:
        return all(s.state in ENDED for s in self.slots)

    def due(self, now: float) -> list[SlotState]:
        """Waiting slots whose round is due, the longest waiting first: a queued round goes
        before one that just became due. A spider re-sharded by a reload starts its new shards
        once its old ones have ended: two shardings of one start list never crawl at once."""
        retiring = {s.slot.spider for s in self.by_pid.values() if s.retired}
        return sorted((s for s in self.slots if s.state in WAITING and s.next_start <= now
                       and s.slot.spider not in retiring), key=lambda s: s.next_start)

    def next_due_in(self, now: float, longest: float) -> float:
        """Seconds until the next waiting slot is due, at most ``longest``."""
        return min([longest] + [s.next_start - now for s in self.slots
                                if s.state in WAITING and s.next_start > now])

    def measured_peaks(self) -> list[int] | None:
        """Every slot's peak PSS in bytes, once each has run a round; else None."""
        samples = [int(s.peak_pss_mb * 1024 * 1024) for s in self.slots if s.peak_pss_mb]
        return samples if len(samples) == len(self.slots) else None

    def state_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for slot in self.slots:
            counts[slot.state] = counts.get(slot.state, 0) + 1
        return counts

    def records(self, wall_now: float, mono_now: float) -> list[SlotRecord]:
        return [state.record(wall_now, mono_now) for state in self.slots]

    # --- transitions ------------------------------------------------------------------------------

    def replan(self, plan: Plan) -> None:
        """Slots the new plan keeps keep their state; new ones start; dropped ones are retired
        (a running round ends as it is, and nothing more starts for them)."""
        kept = {state.slot: state for state in self.slots}
        self.slots = [kept.pop(slot) if slot in kept else SlotState(slot) for slot in plan.slots]
        for state in kept.values():
            state.retired = True

    def queue(self, states: list[SlotState]) -> None:
        """Due rounds that get no turn now wait in the queue (a crashed one stays restarting)."""
        for state in states:
            if state.state in (SlotStatus.STARTING, SlotStatus.SLEEPING):
                state.state = SlotStatus.QUEUED

    def started(self, state: SlotState, pid: int, log_offset: int = 0) -> None:
        state.pid = state.round_pid = pid
        state.log_offset = log_offset
        state.state = SlotStatus.RUNNING
        state.round_started = time.time()
        state.round_started_mono = time.monotonic()
        self.by_pid[pid] = state

    def take(self, pid: int) -> SlotState | None:
        """The slot whose worker ``pid`` was, no longer running; None for another child."""
        return self.by_pid.pop(pid, None)

    def finish(self, state: SlotState, status: int, record: WorkerRecord | None, *,
               stopping: bool, once: bool, config: CollectorConfig,
               cause: str | None = None) -> RoundEnd:
        """Move a slot on when its worker ended with ``status`` (from ``waitpid``); ``record``
        is that round's worker record, if it wrote one; ``cause`` the failure its log ends
        with, for an exit that is a failure."""
        ok, how = describe_exit(status)
        if cause and not ok:
            how = f"{how}: {cause}"
        state.pid = None
        state.last_exit = how
        round_error = None
        if record:
            state.outcome = record
            state.items_total += record.items
            state.peak_pss_mb = max(state.peak_pss_mb, record.pss_mb)
            if record.last_error:
                state.last_error = round_error = record.last_error
        if state.retired:
            return RoundEnd.RETIRED
        if stopping:
            state.state = SlotStatus.STOPPED
            return RoundEnd.STOPPED
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == DISK_FULL_EXIT:
            # Not the worker's fault: wait for space, then run the round again.
            state.state = SlotStatus.DISK_FULL
            state.last_error = "disk full"
            state.next_start = time.monotonic()
            return RoundEnd.DISK_FULL
        if ok:
            state.rounds += 1
            state.failures = 0
            state.state = SlotStatus.DONE if once else SlotStatus.SLEEPING
            state.next_start = time.monotonic() + config.round_interval_of(state.slot.spider)
            return RoundEnd.SUCCEEDED
        return self._crashed(state, how, round_error)

    def _crashed(self, state: SlotState, how: str, round_error: str | None) -> RoundEnd:
        state.failures += 1
        # This round's: an earlier round's error is no cause of this one.
        state.last_error = how + (f"; {round_error}" if round_error else "")
        if state.failures >= FAILURES_BEFORE_GIVING_UP:
            state.state = SlotStatus.FAILED
            logger.error("%s %s failed %d times in a row (%s): giving up on it",
                         state.slot.spider, state.slot.shard, state.failures, how)
            return RoundEnd.GAVE_UP
        delay = min(BACKOFF_MAX, BACKOFF_START * 2 ** (state.failures - 1))
        state.state = SlotStatus.RESTARTING
        state.restarts += 1
        state.next_start = time.monotonic() + delay
        logger.warning("%s %s ended (%s); restarting in %.0f s", state.slot.spider,
                       state.slot.shard, how, delay)
        return RoundEnd.RESTARTING

    def stop_rest(self) -> None:
        """The runner stopped: every slot that has not ended is stopped."""
        for state in self.slots:
            if state.state not in ENDED:
                state.state = SlotStatus.STOPPED
