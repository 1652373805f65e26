"""The item store: JSON Lines in segments per spider-shard, only whole lines ever visible.

Rounds append to the spider-shard's open segment, ``{spider}-{i}of{N}-{stamp}.jsonl.part`` (each
line written unbuffered as it comes), which closes to ``.jsonl`` (or ``.jsonl.gz``) at the end of
the first round past its hour (``ITEMSTORE_SEGMENT_SECONDS``) or size boundary
(:mod:`pipelines.segments`): files grow with hours, not rounds. Each start finds the open segment
through its pointer file (:mod:`pipelines.segmentpointer`), not by listing ``items/``, and cuts
its torn last line, if a kill left one (reading only the file's tail), before more is appended;
whole lines are never lost. Only the spider-shard's own files are touched, and only
while it holds its worker lock.
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import time
from pathlib import Path
from typing import IO, Any

import scrapy
from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured

from pipelines.segmentpointer import SegmentPointer
from pipelines.segments import (
    PART_SUFFIX,
    SegmentPolicy,
    close_segment,
    recover_part,
    remove_stale_compression,
    remove_stale_compressions,
    stamp_now,
)
from scraper.signals import item_written
from scraper.utils.diskspace import is_disk_full, report_disk_full
from scraper.utils.layout import DataLayout, worker_slug
from scraper.utils.sharding import sharded_spider

logger = logging.getLogger(__name__)


class JsonLinesItemStore:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.layout = DataLayout.from_settings(crawler.settings)
        settings = crawler.settings
        self.policy = SegmentPolicy(settings.getfloat("ITEMSTORE_SEGMENT_SECONDS"),
                                    settings.getint("ITEMSTORE_SEGMENT_BYTES"),
                                    settings.get("ITEMSTORE_COMPRESS") or "")
        self.file: IO[bytes] | None = None
        self.part_path: Path | None = None
        self.count = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> JsonLinesItemStore:
        if not crawler.settings.getbool("ITEMSTORE_ENABLED"):
            raise NotConfigured("ITEMSTORE_ENABLED is off: items go to the feeds (-o) only")
        return cls(crawler)

    def open_spider(self) -> None:
        spider = sharded_spider(self.crawler)
        directory = self.layout.items_dir(spider.name)
        directory.mkdir(parents=True, exist_ok=True)
        prefix = worker_slug(spider.name, spider.shard)
        pointer = SegmentPointer(self.layout.open_segment_pointer(spider.name, spider.shard),
                                 prefix)
        named = pointer.read()
        if named is None:  # no pointer yet: list the directory this once
            remove_stale_compressions(directory, prefix)
            parts = sorted(directory.glob(f"{prefix}-*.jsonl{PART_SUFFIX}"))
        else:
            remove_stale_compression(directory / named)
            parts = [part for part in [directory / named] if part.exists()]
        now = time.time()
        current: Path | None = None
        for part in parts:
            kept = recover_part(part)
            if kept is None:
                continue
            if current is not None:  # two open segments: only a kill between rounds makes one
                self._close(current)
            current = part
            if self.policy.is_due(part, kept, now):
                self._close(part)
                current = None
        if current is None:
            current = _unused(directory / f"{prefix}-{stamp_now(now)}.jsonl")
            current = current.with_name(current.name + PART_SUFFIX)
        if current.name != named:  # named before the file exists: never a segment it misses
            pointer.write(current.name)
        self.part_path = current
        # O_APPEND: every line lands at the end whatever else happened to the file.
        self.file = open(current, "ab", buffering=0)  # noqa: SIM115 - the whole round
        self.good_size = os.fstat(self.file.fileno()).st_size

    def _close(self, part: Path) -> Path:
        final = close_segment(part, self.policy.compress)
        logger.info("closed segment %s", final.name)
        return final

    def process_item(self, item: scrapy.Item) -> scrapy.Item:
        if self.file is None:  # the round is closing: the disk filled up
            raise DropItem("not written: the data disk is full", log_level="DEBUG")
        try:
            line = json_line(item)
        except ValueError as exc:  # NaN, Infinity, an integer past 64 bits
            self.crawler.stats.inc_value("itemstore/refused")
            logger.error("item not written: %s (%s)", exc, item.get("url") or
                         item.get("full_name") or type(item).__name__)
            raise DropItem(f"not written: {exc}", log_level="DEBUG") from None
        try:
            # One unbuffered write per line: what the OS has survives a kill -9 of this process.
            written = os.write(self.file.fileno(), line)
            if written != len(line):
                raise OSError(errno.ENOSPC, "short write", str(self.part_path))
        except OSError as exc:
            if not is_disk_full(exc):
                raise
            self._disk_full(exc)
            raise DropItem("not written: the data disk is full", log_level="DEBUG") from None
        answers = self.crawler.signals.send_catch_log(item_written, item=item)
        if any(answer is False for _, answer in answers):
            # Its content hash could not be stored (a full disk): kept, the line would be
            # written again next round. Truncating frees space: it never fails for ENOSPC.
            os.ftruncate(self.file.fileno(), self.good_size)
            self.crawler.stats.inc_value("itemstore/taken_back")
            raise DropItem("not written: its content hash could not be stored (the data disk "
                           "is full)", log_level="DEBUG")
        self.good_size += len(line)
        self.count += 1
        self.crawler.stats.inc_value("itemstore/written")
        return item

    def _disk_full(self, exc: OSError) -> None:
        """Cut any torn line, keep every whole one, and end the round."""
        assert self.file is not None
        os.ftruncate(self.file.fileno(), self.good_size)  # frees space: never fails for ENOSPC
        report_disk_full(f"cannot write items to {self.part_path}, {self.count} items kept", exc)
        self.crawler.stats.inc_value("itemstore/disk_full")
        self._close_file()

    def close_spider(self) -> None:
        self._close_file()

    def _close_file(self) -> None:
        if self.file is None or self.part_path is None:
            return
        try:
            os.fsync(self.file.fileno())
        except OSError as exc:  # the lines are in the page cache already; the close still counts
            logger.warning("fsync %s: %s", self.part_path, exc)
        self.file.close()
        self.file = None
        if not self.good_size:
            self.part_path.unlink()
            return
        final = self.part_path
        if self.policy.is_due(self.part_path, self.good_size, time.time()):
            try:
                final = self._close(self.part_path)
            except OSError as exc:  # compressing needs room: the segment stays open, whole
                if not is_disk_full(exc):
                    raise
                logger.warning("segment %s stays open: no room to compress it (%s)",
                               self.part_path.name, exc.strerror)
        if self.count:
            logger.info("wrote %d items to %s", self.count, final)
            self.crawler.stats.set_value("itemstore/file", str(final))


def json_line(item: Any) -> bytes:
    """The item as one JSON line: the bytes ``json.dumps(ItemAdapter(item).asdict())`` gives.

    Only the top level goes through ItemAdapter; json converts the values itself and asks
    :func:`_nested` for the rare nested item; ``asdict`` would rebuild every value in Python
    first (68 µs against 22 µs per docs item: benchmarks/README.md, "Where the time goes")."""
    fields = dict(ItemAdapter(item).items())
    for name, value in fields.items():
        if not storable(value):
            raise ValueError(f"{name}: {str(value)[:60]} holds NaN, an infinity or an integer "
                             "beyond 64 bits, which JSON readers and SQLite refuse")
    return (json.dumps(fields, ensure_ascii=False, default=_nested) + "\n").encode()


def storable(value: Any) -> bool:
    """No NaN, infinity or integer past 64 bits anywhere in ``value`` (checked without
    recursion: an item's nesting is shallow, a hostile one may not be)."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, (str, bool)) or current is None:
            continue
        if isinstance(current, int):
            if not -(2**63) <= current < 2**63:
                return False
        elif isinstance(current, float):
            if not math.isfinite(current):
                return False
        elif isinstance(current, dict):
            stack.extend(current.values())
        elif isinstance(current, (list, tuple)):
            stack.extend(current)
    return True


def _nested(value: Any) -> Any:
    if ItemAdapter.is_item(value):
        return ItemAdapter(value).asdict()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _unused(path: Path) -> Path:
    """``path``, or with ``-1``, ``-2``… when a segment opened in the same second already used
    it (in any of its forms: open, closed, compressed)."""
    candidate, n = path, 1
    while any(candidate.with_name(candidate.name + suffix).exists()
              for suffix in ("", PART_SUFFIX, ".gz")):
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate
