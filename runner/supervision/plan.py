"""The shard plan: how N workers are divided among the spiders.

Workers go to spiders in proportion to ``weight`` by the largest-remainder method, never more to
a spider than its start list has entries (a shard with no entry would do nothing); what a capped
spider cannot use goes to the others, and workers no spider can use are not started.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scraper.config.collector import SPIDER_NAMES, CollectorConfig
from scraper.utils.layout import worker_slug
from scraper.utils.sharding import Shard
from scraper.utils.units import counted


@dataclass(frozen=True, slots=True)
class WorkerSlot:
    """One planned worker: exactly ``scrapy crawl {spider} -a shard={shard}``."""

    spider: str
    shard: Shard

    @property
    def slug(self) -> str:
        return worker_slug(self.spider, self.shard)

    def crawl_argv(self) -> list[str]:
        return ["scrapy", "crawl", self.spider, "-a", f"shard={self.shard}"]


@dataclass(frozen=True, slots=True)
class Plan:
    counts: dict[str, int]  # spider → workers, in the order shown
    requested: int

    @property
    def slots(self) -> list[WorkerSlot]:
        return [WorkerSlot(spider, Shard(i, k))
                for spider, k in self.counts.items() for i in range(k)]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def describe(self) -> str:
        """``plan: docs 10 (0/10..9/10), trending 6, search 4 — 20 workers``."""
        parts = []
        for n, (spider, k) in enumerate(self.counts.items()):
            shards = f" (0/{k}..{k - 1}/{k})" if n == 0 and k > 1 else ""
            parts.append(f"{spider} {k}{shards}")
        text = f"plan: {', '.join(parts) or 'nothing to run'} — {counted(self.total, 'worker')}"
        unused = self.requested - self.total
        if unused > 0:
            text += f" ({unused} of --workers {self.requested} not started: no spider has " \
                    "start entries left for them)"
        return text


def allocate(requested: int, weights: dict[str, int], caps: dict[str, int]) -> dict[str, int]:
    """Largest remainder over ``weights``, each spider capped at ``caps``; surplus redistributed."""
    counts = dict.fromkeys(weights, 0)
    remaining = requested
    open_spiders = [s for s in weights if weights[s] > 0 and caps[s] > 0]
    while remaining > 0 and open_spiders:
        total_weight = sum(weights[s] for s in open_spiders)
        quotas = {s: remaining * weights[s] / total_weight for s in open_spiders}
        shares = {s: int(q) for s, q in quotas.items()}
        leftover = remaining - sum(shares.values())
        # Ties go to the heavier spider, then to config order: the same plan every time.
        order = sorted(open_spiders, key=lambda s: (-(quotas[s] - shares[s]), -weights[s],
                                                    list(weights).index(s)))
        for s in order[:leftover]:
            shares[s] += 1
        for s in open_spiders:
            take = min(shares[s], caps[s] - counts[s])
            counts[s] += take
            remaining -= take
        open_spiders = [s for s in open_spiders if counts[s] < caps[s]]
    return counts


def make_plan(config: CollectorConfig, workers: int,
              spiders: Sequence[str] = SPIDER_NAMES, *, shared_queue: bool = False) -> Plan:
    weights = {s: config.spider(s).weight for s in spiders}
    caps = {s: len(config.spider(s).start_entries()) for s in spiders}
    if shared_queue and "docs" in caps and caps["docs"]:
        # Distributed mode: docs workers pull pages from one shared queue, so any number of them
        # has work, not one per start URL. (trending and search stay capped: their start
        # entries are their parallelism — one page, or one chain of pages, each.)
        caps["docs"] = workers
    counts = allocate(workers, weights, caps)
    ordered = dict(sorted(((s, k) for s, k in counts.items() if k > 0),
                          key=lambda sk: (-sk[1], list(spiders).index(sk[0]))))
    return Plan(ordered, workers)
