"""The runner's own state files: ``status.json`` (its plan and slots), ``runner-command.json`` (how
it was started, for the watchdog) and ``health.json`` (what the watchdog has reported).

Versioned dataclasses, written and read only here; written like every state file
(scraper/utils/statefile.py: atomic, private), read leniently (a field of the wrong type or missing
takes its default).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from scraper.utils.statefile import STATE_VERSION, from_dict, read_json, write_json_atomic


class SlotStatus(StrEnum):
    """What a planned worker is doing; its value is what status.json and ``status`` show."""

    STARTING = "starting"
    QUEUED = "queued"  # due, waiting for a turn in the autoscaled pool
    RUNNING = "running"
    SLEEPING = "sleeping"  # between rounds
    RESTARTING = "restarting"  # crashed; starts again after a backoff
    DISK_FULL = "disk_full"
    FAILED = "failed"  # gave up after too many crashes in a row
    DONE = "done"  # a --once round ended
    STOPPED = "stopped"


WAITING = (SlotStatus.STARTING, SlotStatus.SLEEPING, SlotStatus.RESTARTING,
           SlotStatus.DISK_FULL, SlotStatus.QUEUED)
"""States that fork a worker once its next round is due."""
ENDED = (SlotStatus.DONE, SlotStatus.FAILED)
"""States a slot never leaves."""
KEPT_GOING = (SlotStatus.RUNNING, SlotStatus.SLEEPING, SlotStatus.QUEUED, SlotStatus.RESTARTING)
"""States that last only while a runner supervises the slot: shown as ``down`` without one."""


class ShownState(StrEnum):
    """What ``status`` shows for a worker beyond its slot's own state."""

    REDIS_WAIT = "redis-wait"  # running, paused: its Redis is unreachable
    DOWN = "down"  # its slot says it is kept going, and no runner is alive


UP = (SlotStatus.RUNNING, SlotStatus.SLEEPING, SlotStatus.QUEUED, ShownState.REDIS_WAIT)
"""Shown states of a worker that is collecting, or will at its next round."""


@dataclass
class RunnerLaunch:
    """How the runner was started: what the watchdog needs to start it again.

    Kept in its own ``state/runner-command.json``, written once at start, so that a damaged
    ``status.json`` cannot stop the watchdog from restarting a dead runner."""

    command: list[str] = field(default_factory=list)  # Redis password masked
    cwd: str | None = None
    config: str | None = None  # the file the runner read, even when found as ./collector.yaml
    once: bool = False
    version: int = STATE_VERSION


@dataclass
class RunnerRecord:
    """The ``runner`` object of ``status.json``."""

    pid: int | None = None
    started_at: float = 0.0
    updated_at: float = 0.0  # wall clock, shown
    updated_monotonic: float | None = None  # time.monotonic(): how old it is, whatever the clock
    state: str = ""  # running / stopping
    command: list[str] = field(default_factory=list)  # Redis password masked
    cwd: str | None = None
    config: str | None = None
    data_dir: str = ""
    plan: str = ""
    planned: int = 0
    round_interval: float = 0.0
    once: bool = False
    memory_budget: int | None = None
    disk_full_since: float | None = None
    redis_url: str | None = None  # password masked
    redis: dict[str, Any] | None = None  # the Redis beacon's state, when distributed
    # workers that may crawl at once now (runner/supervision/autoscale.py)
    concurrency: int | None = None
    concurrency_range: list[int] | None = None  # its minimum and maximum
    cpu_ratio: float | None = None  # the machine's CPU use it was judged on (0–1)
    github_identity: str | None = None  # whose GitHub budget it spends: a label, never a token

    def launch(self) -> RunnerLaunch:
        return RunnerLaunch(self.command, self.cwd, self.config, self.once)


@dataclass
class SlotRecord:
    """One planned worker in ``status.json``'s ``workers`` list."""

    spider: str = ""
    shard: str = ""
    slug: str = ""
    state: str = ""  # a SlotStatus value
    pid: int | None = None  # the running worker
    round_pid: int | None = None  # the latest round's worker, running or not
    rounds: int = 0
    failures: int = 0
    restarts: int = 0
    next_round_at: float | None = None  # wall clock, shown
    next_round_monotonic: float | None = None  # time.monotonic(): when it is due
    round_started_at: float | None = None  # wall clock, shown
    round_started_monotonic: float | None = None  # time.monotonic(): how long it has run
    last_exit: str | None = None
    last_error: str | None = None
    items_total: int = 0


@dataclass
class HealthMemory:
    """``state/health.json``: the unhealthy spiders the watchdog has already reported, so it
    says so once when it begins and once when it ends, never while it persists."""

    reported: dict[str, str] = field(default_factory=dict)  # spider → the kind reported
    disk_warned: bool = False  # "disk full in N days" said; said again only after it passed
    unusual: list[str] = field(default_factory=list)  # spider-shard slugs said unusual
    version: int = STATE_VERSION


@dataclass
class StatusFile:
    """``state/status.json``: written by the runner every ``STATUS_INTERVAL`` seconds."""

    runner: RunnerRecord = field(default_factory=RunnerRecord)
    workers: list[SlotRecord] = field(default_factory=list)
    version: int = STATE_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StatusFile:
        runner = data.get("runner")
        workers = data.get("workers")
        return cls(
            from_dict(RunnerRecord, runner if isinstance(runner, dict) else {}),
            [from_dict(SlotRecord, w) for w in (workers if isinstance(workers, list) else [])
             if isinstance(w, dict)],
            _int_or(data.get("version"), 0))


# --- reading and writing ------------------------------------------------------------------------


def read_status(path: Path) -> StatusFile | None:
    data = read_json(path)
    return StatusFile.from_dict(data) if data is not None else None


def write_status(path: Path, status: StatusFile) -> None:
    write_json_atomic(path, status.to_dict())


def read_health_memory(path: Path) -> HealthMemory:
    data = read_json(path)
    return from_dict(HealthMemory, data) if data is not None else HealthMemory()


def write_health_memory(path: Path, memory: HealthMemory) -> None:
    write_json_atomic(path, asdict(memory))


def read_launch(path: Path) -> RunnerLaunch | None:
    data = read_json(path)
    return from_dict(RunnerLaunch, data) if data is not None else None


def write_launch(path: Path, launch: RunnerLaunch) -> None:
    write_json_atomic(path, asdict(launch))


def _int_or(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
