"""The memory guard: never start more workers than the machine's memory can hold.

The budget is ``--memory-budget`` or config ``memory_budget``, else the cgroup (v2, then v1)
memory limit when one is set, else total RAM. A plan is refused when the parent's PSS plus
N × the per-worker PSS (a first guess until measured on this machine, then the measured figure,
kept in ``state/memory.json``) exceeds ``PLAN_BUDGET_SHARE`` of the budget. While running, a fork
waits while available memory is below ``LOW_MEMORY_SHARE`` of the budget.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import psutil

from scraper.utils.statefile import read_json, write_json_atomic
from scraper.utils.units import format_size

MB = 1024 * 1024
WORKER_PSS_GUESS = 40 * MB
MIN_WORKER_PSS = 1 * MB
MAX_WORKER_PSS = 64 * 1024 * MB  # no worker is bigger: a larger figure is a damaged file
logger = logging.getLogger(__name__)
"""Per-worker PSS before one has been measured here: above a forked worker's USS at close in the
benchmarks (``benchmarks/README.md``), so a first plan errs on the safe side."""
PLAN_BUDGET_SHARE = 0.80
"""A plan may take at most this share of the budget; the rest is for the OS, page cache, ssh."""
LOW_MEMORY_SHARE = 0.10
"""Below this much available memory (share of the budget), new forks wait."""

_CGROUP_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),                    # v2
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),  # v1
)


def cgroup_limit() -> int | None:
    for path in _CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        # v2 writes "max" when unlimited; v1 writes a huge number close to 2**63.
        if text.isdigit() and int(text) < psutil.virtual_memory().total * 4:
            return int(text)
    return None


def memory_budget(explicit: int | None) -> tuple[int, str]:
    """The budget in bytes and where it came from."""
    if explicit:
        return explicit, "--memory-budget/memory_budget"
    limit = cgroup_limit()
    if limit:
        return limit, "cgroup memory limit"
    return psutil.virtual_memory().total, "total RAM"


@dataclass(frozen=True, slots=True)
class Estimate:
    parent: int
    per_worker: int
    per_worker_measured: bool
    workers: int
    budget: int
    budget_source: str

    @property
    def total(self) -> int:
        return self.parent + self.workers * self.per_worker

    @property
    def allowed(self) -> int:
        return int(self.budget * PLAN_BUDGET_SHARE)

    @property
    def fits(self) -> bool:
        return self.total <= self.allowed

    @property
    def largest_safe_workers(self) -> int:
        return max(0, (self.allowed - self.parent) // self.per_worker)

    def refusal(self) -> str:
        per = f"{self.per_worker / MB:.0f} MB" + ("" if self.per_worker_measured else " (guess)")
        return (f"refusing {self.workers} workers: estimate {format_size(self.total)} (parent "
                f"{self.parent / MB:.0f} MB + {self.workers} × {per}) exceeds 80% of the memory "
                f"budget {format_size(self.budget)} ({self.budget_source}); the largest safe "
                f"--workers is {self.largest_safe_workers} (--force to start anyway)")


class MemoryGuard:
    """Estimates before start, measured figures kept in ``state/memory.json``."""

    def __init__(self, state_file: Path, budget: int, budget_source: str) -> None:
        self.state_file = state_file
        self.budget = budget
        self.budget_source = budget_source
        self._warned = False

    def measured_worker_pss(self) -> int | None:
        """The measured figure, or None (the guess stands in) when there is none or it is not a
        size a worker can have: ``Infinity``, a negative number, text, a bool (one WARNING)."""
        data = read_json(self.state_file) or {}
        value = data.get("worker_pss")
        if type(value) is int and MIN_WORKER_PSS <= value <= MAX_WORKER_PSS:
            return value
        if value is not None and not self._warned:
            self._warned = True
            logger.warning("%s: worker_pss %s is not a worker's size (%d to %d bytes); ignored, "
                           "the memory guard estimates from its guess (%s) until the next "
                           "measurement", self.state_file, str(value)[:40], MIN_WORKER_PSS,
                           MAX_WORKER_PSS, format_size(WORKER_PSS_GUESS))
        return None

    def record_worker_pss(self, samples: list[int]) -> None:
        """Keep the median of the workers' peak PSS seen in a round of the whole plan."""
        if not samples:
            return
        median = sorted(samples)[len(samples) // 2]
        write_json_atomic(self.state_file, {"worker_pss": median, "samples": len(samples)})

    def estimate(self, workers: int) -> Estimate:
        measured = self.measured_worker_pss()
        parent = psutil.Process().memory_full_info()
        return Estimate(getattr(parent, "pss", parent.uss), measured or WORKER_PSS_GUESS,
                        measured is not None, workers, self.budget, self.budget_source)

    def low_memory(self) -> bool:
        return psutil.virtual_memory().available < self.budget * LOW_MEMORY_SHARE
