"""How many planned workers crawl at once: an autoscaled pool over the machine's CPU.

A docs page costs a few milliseconds of CPU. Twenty workers crawling at once on two cores are
twenty processes taking turns on them: each switch lands in another address space with cold
caches, and every page cost a third more CPU than with the pool below in the 20-worker benchmark
(``benchmarks/README.md``). Politeness-bound crawls (a delay per site, slow servers) are the
opposite case: each worker mostly waits, and all twenty should run.

So every planned worker keeps its shard, its lock, its state file and its rounds, but a round
that is due starts only while fewer than :attr:`AutoscaledPool.desired` workers are crawling;
the others wait their turn (state ``queued``). ``desired`` starts at ``min_concurrency`` (the
CPU cores by default), grows by one per :data:`SCALE_INTERVAL` while the machine's CPU is below
``max_used_cpu_ratio`` and a round waits for a turn, and shrinks by one per interval while it
is above (never below ``min_concurrency``; running workers are never stopped, they finish their
round). The names follow Crawlee's ``Snapshotter`` and ``AutoscaledPool``, which do this for
the concurrency of one crawler.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass

import psutil

SCALE_INTERVAL = 1.0
"""Seconds between two changes of ``desired``: one step per second reaches 20 workers from 2 in
18 s, short against a round, and a CPU sample spans at least this long."""
CPU_WINDOW = 2.0
"""The CPU use judged is the mean over the last this many seconds: a fork's start-up burst or
one worker's round ending does not swing the pool."""


def allowed_cpus() -> list[int] | None:
    """The CPU numbers this process may run on, or None where that is unknown."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return None


def cpu_cores() -> int:
    """How many CPUs this process may run on (its affinity, e.g. ``taskset`` or a cpuset)."""
    cpus = allowed_cpus()
    return len(cpus) if cpus is not None else os.cpu_count() or 1


@dataclass(frozen=True, slots=True)
class CpuSample:
    at: float  # time.monotonic()
    busy: float  # CPU seconds of the whole machine, all CPUs, not idle
    total: float  # CPU seconds, all CPUs


class Snapshotter:
    """The CPU use of the CPUs this process may run on, over a recent window (``/proc/stat``
    through psutil). Niced time counts as busy: a runner started under ``nice`` spends all its
    workers' CPU there."""

    def __init__(self, window: float = CPU_WINDOW) -> None:
        self.window = window
        self.samples: deque[CpuSample] = deque()
        self.cpus = allowed_cpus()

    def sample(self, now: float | None = None) -> None:
        per_cpu = psutil.cpu_times(percpu=True)
        if self.cpus is not None:
            per_cpu = [per_cpu[i] for i in self.cpus if i < len(per_cpu)] or per_cpu
        busy = total = 0.0
        for times in per_cpu:
            # guest time is counted in user time too (psutil's own cpu_percent leaves it out)
            cpu_total = sum(times) - getattr(times, "guest", 0.0) - getattr(
                times, "guest_nice", 0.0)
            free = times.idle + getattr(times, "iowait", 0.0)
            busy += cpu_total - free
            total += cpu_total
        self.add(CpuSample(time.monotonic() if now is None else now, busy, total))

    def add(self, sample: CpuSample) -> None:
        self.samples.append(sample)
        # Keep one sample at least `window` old: the span judged is never shorter than it.
        while len(self.samples) > 2 and self.samples[1].at <= sample.at - self.window:
            self.samples.popleft()

    def cpu_ratio(self) -> float | None:
        """Busy share of all CPUs over the window, or None before two samples."""
        if len(self.samples) < 2:
            return None
        first, last = self.samples[0], self.samples[-1]
        total = last.total - first.total
        if total <= 0:
            return None
        # The per-CPU times are summed as floats: a fully busy window can come out a hair above
        # 1 (1.0000000000001894), an idle one a hair below 0.
        return min(1.0, max(0.0, (last.busy - first.busy) / total))


class AutoscaledPool:
    """``desired``: how many workers may crawl at once, between ``minimum`` and ``maximum``."""

    def __init__(self, minimum: int, maximum: int, max_used_cpu_ratio: float,
                 snapshotter: Snapshotter | None = None) -> None:
        self.minimum = max(1, min(minimum, maximum))
        self.maximum = max(1, maximum)
        self.max_used_cpu_ratio = max_used_cpu_ratio
        self.snapshotter = snapshotter or Snapshotter()
        self.desired = self.minimum
        self._last_change: float | None = None

    def update(self, waiting: int, now: float | None = None) -> int:
        """Take a CPU sample and adjust ``desired``; ``waiting`` is how many due rounds wait
        for a turn. Returns ``desired``."""
        now = time.monotonic() if now is None else now
        self.snapshotter.sample(now)
        if self._last_change is not None and now - self._last_change < SCALE_INTERVAL:
            return self.desired
        ratio = self.snapshotter.cpu_ratio()
        if ratio is None:
            return self.desired
        if ratio >= self.max_used_cpu_ratio:
            if self.desired > self.minimum:
                self.desired -= 1
                self._last_change = now
        elif waiting and self.desired < self.maximum:
            self.desired += 1
            self._last_change = now
        return self.desired

    @property
    def cpu_ratio(self) -> float | None:
        return self.snapshotter.cpu_ratio()
