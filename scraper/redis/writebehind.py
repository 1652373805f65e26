"""Writes that must reach Redis eventually, in order, even across an outage or a restart.

The dedup stores record what a worker has *written* (a content hash is confirmed, a page is
recorded as collected, its links stored) after the item file has it. Those records must not be
lost while Redis is away, and the worker must not stall for them: each is a list of plain Redis
commands (strings only), sent at once when Redis answers, else queued here, sent in order when
it is back, and — if the worker closes first — spilled to ``{data_dir}/state/distributed/
{spider}-{i}of{N}.pending.jsonl`` and replayed at that shard's next start. Every command is
idempotent (SET/HSET/DEL/EXPIRE or a compare-and-delete script), so a replay after a kill that
hit between sending and truncating the file does no harm.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import deque
from pathlib import Path

import redis
from scrapy.crawler import Crawler

from scraper.redis.connection import RedisLink, RedisUnavailable, get_link
from scraper.utils.layout import DataLayout
from scraper.utils.sharding import sharded_spider
from scraper.utils.statefile import private_dirs, write_atomic

logger = logging.getLogger("scraper.cluster")

Command = list[str]


def is_batch(value: object) -> bool:
    """A spilled line as :meth:`WriteBehind.close` writes it: a list of commands, each a
    non-empty list of strings."""
    return isinstance(value, list) and bool(value) and all(
        isinstance(command, list) and command and all(isinstance(a, str) for a in command)
        for command in value)


class WriteBehind:
    def __init__(self, link: RedisLink, spill_path: Path | None) -> None:
        self.link = link
        self.spill_path = spill_path
        self.pending: deque[list[Command]] = deque()
        self._from_spill = False
        self.skipped = 0  # spilled lines that were not writes (counted, logged)
        link.on_up(self.flush)
        if spill_path is not None and spill_path.exists():
            self._load_spill(spill_path)

    def _load_spill(self, path: Path) -> None:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            logger.error("cannot read %s: %s; its Redis writes stay there", path, exc)
            return
        bad = 0
        for line in lines:
            try:
                batch = json.loads(line)
            except (ValueError, RecursionError):  # a line torn by a kill while spilling, or worse
                batch = None
            if is_batch(batch):
                self.pending.append(batch)
            elif line.strip():
                bad += 1
        if bad:
            self.skipped += bad
            logger.warning("%s: %d lines are not Redis writes this collector spilled; skipped",
                           path, bad)
        self._from_spill = bool(self.pending)
        self.flush()

    def submit(self, *commands: Command) -> bool:
        """Send ``commands`` (one transaction) now if possible; True if they reached Redis."""
        self.pending.append([list(map(str, command)) for command in commands])
        return self.flush()

    def flush(self) -> bool:
        """Send what waits, oldest first; True when nothing waits any more."""
        while self.pending:
            batch = self.pending[0]
            try:
                pipe = self.link.client.pipeline(transaction=True)
                for command in batch:
                    pipe.execute_command(*command)
                pipe.execute()
            except RedisUnavailable:
                return False
            except redis.ResponseError as exc:
                if not self._from_spill:
                    raise
                # A spilled line Redis will never take (damaged in the file): it would fail
                # this shard at every start.
                self.skipped += 1
                logger.warning("Redis refused a spilled write from %s (%s); skipped",
                               self.spill_path, str(exc)[:200])
            self.pending.popleft()
        if self._from_spill and self.spill_path is not None:
            self._from_spill = False
            with contextlib.suppress(FileNotFoundError):
                self.spill_path.unlink()
        return True

    def close(self) -> None:
        """At spider close: one last try, then keep what is left in the spill file."""
        if self.flush() or self.spill_path is None:
            return
        path = self.spill_path
        private_dirs(path.parent)
        write_atomic(path, "".join(json.dumps(batch) + "\n" for batch in self.pending))
        logger.warning("Redis %s unreachable at close: %d dedup records kept in %s, sent at "
                       "this shard's next start", self.link.label, len(self.pending), path)


def write_behind(crawler: Crawler) -> WriteBehind:
    """The crawler's one write-behind queue (made on first use, once the spider exists)."""
    writes = getattr(crawler, _WRITES_ATTR, None)
    if writes is None:
        spider = sharded_spider(crawler)
        layout = DataLayout.from_settings(crawler.settings)
        writes = WriteBehind(get_link(crawler.settings["REDIS_URL"]),
                             layout.writebehind_spill(spider.name, spider.shard))
        setattr(crawler, _WRITES_ATTR, writes)
    return writes


_WRITES_ATTR = "_hubcollect_write_behind"
