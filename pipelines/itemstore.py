"""The item store: JSON Lines, one file per worker and round, only whole lines ever visible.

A round writes ``{spider}-{i}of{N}-{stamp}.jsonl.part`` (each line flushed as written) and
renames it to ``.jsonl`` when the spider closes. A ``.part`` left by a kill is recovered at this
spider-shard's next start: its whole lines are kept under the ``.jsonl`` name, a torn last line is
cut off. Only the spider-shard's own files are touched, and only while it holds its worker lock.
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import stat
import time
from pathlib import Path
from typing import IO, Any

import scrapy
from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured

from scraper.diskspace import is_disk_full, report_disk_full
from scraper.layout import DataLayout, worker_slug

logger = logging.getLogger(__name__)

PART_SUFFIX = ".part"


class JsonLinesItemStore:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.layout = DataLayout.from_settings(crawler.settings)
        self.file: IO[bytes] | None = None
        self.part_path: Path | None = None
        self.count = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> JsonLinesItemStore:
        if not crawler.settings.getbool("ITEMSTORE_ENABLED"):
            raise NotConfigured("ITEMSTORE_ENABLED is off: items go to the feeds (-o) only")
        return cls(crawler)

    def open_spider(self) -> None:
        spider = self.crawler.spider
        directory = self.layout.items_dir(spider.name)
        directory.mkdir(parents=True, exist_ok=True)
        prefix = worker_slug(spider.name, spider.shard)
        for leftover in sorted(directory.glob(f"{prefix}-*.jsonl{PART_SUFFIX}")):
            recover_part(leftover)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        final = _unused(directory / f"{prefix}-{stamp}.jsonl")
        self.part_path = final.with_name(final.name + PART_SUFFIX)
        self.file = open(self.part_path, "xb", buffering=0)  # noqa: SIM115 - the whole round
        self.good_size = 0

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
        except OSError as exc:  # the lines are in the page cache already; the rename still counts
            logger.warning("fsync %s: %s", self.part_path, exc)
        self.file.close()
        if self.count:
            final = self.part_path.with_name(self.part_path.name[: -len(PART_SUFFIX)])
            os.replace(self.part_path, final)
            logger.info("wrote %d items to %s", self.count, final)
            self.crawler.stats.set_value("itemstore/file", str(final))
        else:
            self.part_path.unlink()
        self.file = None


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
    """``path``, or with ``-1``, ``-2``… when a round in the same second already used it."""
    candidate, n = path, 1
    while candidate.exists() or candidate.with_name(candidate.name + PART_SUFFIX).exists():
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate


def recover_part(part: Path) -> Path | None:
    """Keep the whole lines of a ``.part`` left by a killed round under its ``.jsonl`` name.

    Only a regular file is touched, never through a symbolic link: truncating one would cut a
    file anywhere on the machine. Anything else is left as it is, with an error.
    """
    try:
        fd = os.open(part, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        logger.error("not recovering %s: it is a symbolic link (to %s), which is never "
                     "followed; left as it is", part, os.readlink(part))
        return None
    with open(fd, "r+b") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            logger.error("not recovering %s: not a regular file; left as it is", part)
            return None
        data = handle.read()
        whole = data[: data.rfind(b"\n") + 1]
        if whole and len(whole) != len(data):
            handle.truncate(len(whole))
            handle.flush()
            os.fsync(fd)
    if not whole:
        part.unlink()
        logger.warning("removed %s: a killed round left no whole line in it", part.name)
        return None
    final = part.with_name(part.name[: -len(PART_SUFFIX)])
    os.replace(part, final)
    logger.warning("recovered %d whole lines from %s (a killed round), %d torn bytes cut",
                   whole.count(b"\n"), part.name, len(data) - len(whole))
    return final
