"""One line on the runner's terminal (and runner.log) when a spider's rounds stop bringing data,
and one when data flows again: a foreground runner with no network must not sit silent behind
its ``plan:`` line while every shard fails.

Per spider, not per shard: twelve docs shards failing DNS are one line, with the first shard's
cause. The watchdog's alerts (health over several rounds) are separate and unchanged.
"""

from __future__ import annotations

import logging

from runner.core.health import round_failed
from scraper.utils.statefile import WorkerRecord
from scraper.utils.units import counted

logger = logging.getLogger("runner")


class DataFlowNotices:
    def __init__(self) -> None:
        self.failing: dict[str, set[str]] = {}  # spider → shards whose last round failed

    def round_ended(self, spider: str, shard: str, record: WorkerRecord | None) -> None:
        problem = round_failed(record) if record is not None else None
        shards = self.failing.setdefault(spider, set())
        if problem:
            if not shards:
                logger.warning("%s: no data: shard %s %s", spider, shard, problem)
            shards.add(shard)
        elif shard in shards and record is not None and record.ok:
            shards.discard(shard)
            if not shards:
                # At the no-data line's level: the terminal shows warnings only, and must see
                # the end of what it was warned about.
                logger.warning("%s: data flows again (shard %s: %s, %s)", spider, shard,
                            counted(record.pages, "page"), counted(record.items, "new item"))
