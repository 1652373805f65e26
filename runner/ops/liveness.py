"""Are the collector's processes alive? Judged from ``state/status.json``, the pidfile lock and
psutil. (Whether they collect anything is :mod:`runner.core.health`'s question.)

A worker slot is healthy when the status says ``running`` and psutil agrees that its pid is a
live child of the runner, ``sleeping`` with its next round not overdue, or ``queued`` (its round
is due and waits for a turn in the autoscaled pool). The collector is down
when the runner is gone, when fewer than the required slots are healthy, or when the status is
stale: the runner's loop writes it every 2 s, so a status not written for 3 × ``round_interval``
+ 60 s means a hung runner.

Ages and due times are judged on ``time.monotonic()`` (the runner records it beside the wall
clock; it is one clock for every process since boot), so a clock stepped forward cannot make a
healthy runner look hung, nor a clock stepped back hide a hung one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import psutil

from runner.core.runnerstate import SlotRecord, SlotStatus, StatusFile, read_status
from scraper.utils.layout import DataLayout

STALE_ROUNDS = 3
STALE_SLACK = 60.0
"""Status older than STALE_ROUNDS × round_interval + STALE_SLACK seconds means a hung runner."""
SLEEP_GRACE = 60.0
"""A sleeping slot may be this late for its next round (a fork waits while memory is low)."""
STARTUP_GRACE = 60.0
"""A runner this young may not have written its first status yet."""
CONFIRM_TIMEOUT = 5.0
"""Missing workers are confirmed on a later status; the runner writes one every 2 s."""


Problems = dict[str, tuple[Any, ...]]
"""Unhealthy slots: slug → what is wrong (state, and the dead pid of a "running" slot)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: str  # healthy / starting / stopping: leave it; gone / stale / degraded: restart
    healthy: int
    planned: int
    runner_pid: int | None  # alive, to be stopped before the restart
    reason: str = ""  # for the "down" line
    problems: Problems = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.kind in ("healthy", "starting", "stopping")

    def down_line(self) -> str:
        return (f"collector down: {self.healthy}/{self.planned} workers ({self.reason}); "
                "restarting")


@dataclass(frozen=True, slots=True)
class Clocks:
    """Now, on both clocks: wall for what status.json shows, monotonic for judging."""

    wall: float
    mono: float

    @classmethod
    def now(cls) -> Clocks:
        return cls(time.time(), time.monotonic())

    def until(self, wall: float | None, mono: float | None) -> float | None:
        """Seconds from now to a time recorded on both clocks (monotonic when it was)."""
        if mono is not None:
            return mono - self.mono
        return wall - self.wall if wall is not None else None

    def since(self, wall: float | None, mono: float | None) -> float:
        left = self.until(wall or 0.0, mono)
        return -left if left is not None else float("inf")


def slot_problems(workers: list[SlotRecord], runner_pid: int | None, now: Clocks) -> Problems:
    """Slots not running as a live child of ``runner_pid`` nor sleeping with the next round due."""
    children = _live_children(runner_pid) if runner_pid else set()
    problems: Problems = {}
    for slot in workers:
        if slot.state == SlotStatus.RUNNING:
            if slot.pid not in children:
                problems[slot.slug] = ("running", slot.pid)
        elif slot.state == SlotStatus.QUEUED:
            # due, waiting for a turn to crawl (runner/supervision/autoscale.py): the runner's
            # choice
            continue
        elif slot.state == SlotStatus.SLEEPING:
            due_in = now.until(slot.next_round_at, slot.next_round_monotonic)
            if due_in is None or due_in + SLEEP_GRACE < 0:
                problems[slot.slug] = ("sleeping overdue",)
        else:
            # starting, restarting (crashed), failed, stopped, done
            problems[slot.slug] = (slot.state,)
    return problems


def healthy_slots(workers: list[SlotRecord], runner_pid: int | None, now: Clocks) -> int:
    return len(workers) - len(slot_problems(workers, runner_pid, now))


def _live_children(pid: int) -> set[int]:
    try:
        children = psutil.Process(pid).children()
    except psutil.Error:
        return set()
    alive = set()
    for child in children:
        try:
            if child.status() != psutil.STATUS_ZOMBIE:  # a finished worker not yet reaped
                alive.add(child.pid)
        except psutil.Error:
            pass
    return alive


def assess(status: StatusFile, lock_pid: int | None, min_workers: int | None, now: Clocks,
           earlier: Problems | None = None) -> Verdict:
    """What to do about the runner; ``earlier`` holds the problems seen in an older status."""
    runner, workers = status.runner, status.workers
    planned = runner.planned or len(workers)
    # More than the plan can never be healthy: the plan is the most anyone can ask for.
    required = min(min_workers or planned, planned)
    if lock_pid is None:
        return Verdict("gone", 0, planned, None, "runner gone")
    age = now.since(runner.updated_at, runner.updated_monotonic)
    if runner.pid != lock_pid:
        # The status is an earlier runner's: this one has not written its own yet.
        if _process_age(lock_pid, now.wall) < STARTUP_GRACE:
            return Verdict("starting", 0, planned, lock_pid)
        return Verdict("stale", 0, planned, lock_pid, f"status stale {_age(age)}")
    problems = slot_problems(workers, lock_pid, now)
    if earlier is not None:
        # Only what was already wrong in the earlier status counts, and a "running" slot only
        # if it still names the same dead pid: until the runner's next write, a worker that has
        # just ended is still "running" with a pid that is gone.
        problems = {slug: problem for slug, problem in problems.items() if slug in earlier
                    and (problem[0] != "running" or earlier[slug] == problem)}
    healthy = len(workers) - len(problems)
    if age > STALE_ROUNDS * runner.round_interval + STALE_SLACK:
        return Verdict("stale", healthy, planned, lock_pid, f"status stale {_age(age)}")
    if runner.state == "stopping":
        return Verdict("stopping", healthy, planned, lock_pid)  # someone is stopping it
    if healthy < required:
        return Verdict("degraded", healthy, planned, lock_pid, f"runner pid {lock_pid} alive",
                       problems)
    return Verdict("healthy", healthy, planned, lock_pid)


def next_status(layout: DataLayout, status: StatusFile, timeout: float) -> StatusFile:
    """The first status.json written after ``status``, or the latest one after ``timeout``."""
    written = status.runner.updated_at
    deadline = time.monotonic() + timeout
    latest = status
    while time.monotonic() < deadline:
        time.sleep(0.2)
        latest = read_status(layout.status_file) or latest
        if latest.runner.updated_at != written:
            break
    return latest


def _process_age(pid: int, now: float) -> float:
    try:
        return now - psutil.Process(pid).create_time()
    except psutil.Error:
        return float("inf")


def _age(seconds: float) -> str:
    """``45s``, ``12m``, ``3.5h``, ``2.0d``: the age of a stale status, for a one-line message."""
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f}m"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"
