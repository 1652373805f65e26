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

from scraper.distributed.connection import RedisLink, RedisUnavailable
from scraper.statefile import private_dirs, write_atomic

logger = logging.getLogger("scraper.distributed")

Command = list[str]


class WriteBehind:
    def __init__(self, link: RedisLink, spill_path: Path | None) -> None:
        self.link = link
        self.spill_path = spill_path
        self.pending: deque[list[Command]] = deque()
        self._from_spill = False
        link.on_up(self.flush)
        if spill_path is not None and spill_path.exists():
            self._load_spill(spill_path)

    def _load_spill(self, path: Path) -> None:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            logger.error("cannot read %s: %s; its Redis writes stay there", path, exc)
            return
        for line in lines:
            try:
                batch = json.loads(line)
            except ValueError:
                continue  # a line torn by a kill while spilling
            if isinstance(batch, list):
                self.pending.append(batch)
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
