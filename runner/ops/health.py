"""Is the collector healthy? Judged from ``state/status.json``, the pidfile lock and psutil.

A worker slot is healthy when the status says ``running`` and psutil agrees that its pid is a
live child of the runner, or ``sleeping`` with its next round not overdue. The collector is down
when the runner is gone, when fewer than the required slots are healthy, or when the status is
stale: the runner's loop writes it every 2 s, so a status not written for 3 × ``round_interval``
+ 60 s means a hung runner.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import psutil

from scraper.layout import DataLayout

STALE_ROUNDS = 3
STALE_SLACK = 60.0
"""Status older than STALE_ROUNDS × round_interval + STALE_SLACK seconds means a hung runner."""
SLEEP_GRACE = 60.0
"""A sleeping slot may be this late for its next round (a fork waits while memory is low)."""
STARTUP_GRACE = 60.0
"""A runner this young may not have written its first status yet."""
UP_TIMEOUT = 60.0
"""How long a restarted runner has to hold its pidfile and show its workers running."""
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


def slot_problems(workers: list[dict[str, Any]], runner_pid: int | None, now: float) -> Problems:
    """Slots not running as a live child of ``runner_pid`` nor sleeping with the next round due."""
    children = _live_children(runner_pid) if runner_pid else set()
    problems: Problems = {}
    for slot in workers:
        state, pid, slug = slot.get("state"), slot.get("pid"), str(slot.get("slug"))
        if state == "running":
            if pid not in children:
                problems[slug] = ("running", pid)
        elif state == "sleeping":
            next_at = slot.get("next_round_at")
            if not (isinstance(next_at, int | float) and next_at + SLEEP_GRACE >= now):
                problems[slug] = ("sleeping overdue",)
        else:
            problems[slug] = (state,)  # starting, restarting (crashed), failed, stopped, done
    return problems


def healthy_slots(workers: list[dict[str, Any]], runner_pid: int | None, now: float) -> int:
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


def assess(status: dict[str, Any], lock_pid: int | None, min_workers: int | None, now: float,
           earlier: Problems | None = None) -> Verdict:
    """What to do about the runner; ``earlier`` holds the problems seen in an older status."""
    runner = status.get("runner") or {}
    workers = status.get("workers") or []
    planned = int(runner.get("planned") or len(workers))
    # More than the plan can never be healthy: the plan is the most anyone can ask for.
    required = min(min_workers or planned, planned)
    if lock_pid is None:
        return Verdict("gone", 0, planned, None, "runner gone")
    age = now - float(runner.get("updated_at") or 0)
    if runner.get("pid") != lock_pid:
        # The status is an earlier runner's: this one has not written its own yet.
        if _process_age(lock_pid, now) < STARTUP_GRACE:
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
    interval = float(runner.get("round_interval") or 0)
    if age > STALE_ROUNDS * interval + STALE_SLACK:
        return Verdict("stale", healthy, planned, lock_pid, f"status stale {_age(age)}")
    if runner.get("state") == "stopping":
        return Verdict("stopping", healthy, planned, lock_pid)  # someone is stopping it
    if healthy < required:
        return Verdict("degraded", healthy, planned, lock_pid, f"runner pid {lock_pid} alive",
                       problems)
    return Verdict("healthy", healthy, planned, lock_pid)


def next_status(layout: DataLayout, status: dict[str, Any], timeout: float) -> dict[str, Any]:
    """The first status.json written after ``status``, or the latest one after ``timeout``."""
    from runner.status import read_json

    written = (status.get("runner") or {}).get("updated_at")
    deadline = time.monotonic() + timeout
    latest = status
    while time.monotonic() < deadline:
        time.sleep(0.2)
        latest = read_json(layout.status_file) or latest
        if (latest.get("runner") or {}).get("updated_at") != written:
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
