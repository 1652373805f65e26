"""Item segments: the files a spider-shard's rounds append to, and how one is opened and closed.

A segment is ``{spider}-{i}of{N}-{stamp}.jsonl.part`` while rounds append to it (``stamp``: when
it was opened, UTC) and ``.jsonl`` (or ``.jsonl.gz``) once closed; a closed segment is never
written again, which is what lets the catalog load each file once. It closes at the end of the
first round after its time boundary (``ITEMSTORE_SEGMENT_SECONDS``, aligned to UTC: hourly,
daily) or once it holds ``ITEMSTORE_SEGMENT_BYTES``; ``ITEMSTORE_SEGMENT_SECONDS = 0`` closes
one at every round's end (a file per round).

Everything here runs only in the process holding the spider-shard's worker lock.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from scraper.config.settingrules import COMPRESSIONS
from scraper.utils.itemsizes import closing

logger = logging.getLogger(__name__)

PART_SUFFIX = ".part"
GZIP_SUFFIX = ".gz"
COMPRESSING_SUFFIX = ".tmp"
"""A ``.jsonl.gz`` being written; removed at the next start if a kill left one."""
TAIL_BLOCK = 64 * 1024
"""Bytes read at a time when looking for a torn line's start: recovery reads only the tail."""
STAMP_FORMAT = "%Y%m%dT%H%M%SZ"
_STAMP_RE = re.compile(r"-(\d{8}T\d{6}Z)(?:-\d+)?\.jsonl")


@dataclass(frozen=True, slots=True)
class SegmentPolicy:
    seconds: float
    """Time boundary (aligned to UTC); 0: a segment per round."""
    max_bytes: int
    compress: str
    """``""`` or ``"gzip"``: how a segment is stored once closed."""

    def __post_init__(self) -> None:
        if self.compress not in COMPRESSIONS:
            raise ValueError(f"ITEMSTORE_COMPRESS: {self.compress!r} is not one of "
                             "'' (none), 'gzip'")
        if self.seconds < 0 or self.max_bytes <= 0:
            raise ValueError("ITEMSTORE_SEGMENT_SECONDS must be ≥ 0 and "
                             "ITEMSTORE_SEGMENT_BYTES > 0")

    def is_due(self, part: Path, size: int, now: float) -> bool:
        """True when the segment at ``part`` must close now (rather than take more rounds)."""
        if self.seconds <= 0 or size >= self.max_bytes:
            return True
        opened = opened_at(part)
        if opened is None:  # not a name this store wrote: close it rather than guess
            return True
        return int(now // self.seconds) != int(opened // self.seconds)


def shard_slug(part: Path) -> str | None:
    """``docs-0of4`` for ``docs-0of4-20261207T200000Z.jsonl.part``; None for another name."""
    match = _STAMP_RE.search(part.name)
    return part.name[:match.start()] if match else None


def stamp_now(now: float) -> str:
    return time.strftime(STAMP_FORMAT, time.gmtime(now))


def opened_at(path: Path) -> float | None:
    """When the segment was opened, from its name; None for a name without a stamp."""
    match = _STAMP_RE.search(path.name)
    if match is None:
        return None
    import calendar  # here: `status` imports this module and reads no stamp

    return float(calendar.timegm(time.strptime(match.group(1), STAMP_FORMAT)))


def closed_name(part: Path, compress: str) -> Path:
    name = part.name[: -len(PART_SUFFIX)]
    return part.with_name(name + (GZIP_SUFFIX if compress == "gzip" else ""))


def close_segment(part: Path, compress: str) -> Path:
    """Make the whole-line ``.part`` at ``part`` visible as a closed segment.

    Its size is counted as it closes (:mod:`scraper.utils.itemsizes`). Compressed: the ``.gz``
    is written beside it, synced, renamed into place, and only then the ``.part`` removed; a
    kill in between leaves either the ``.part`` alone (compressed again at the next start) or
    both, and then :func:`drop_if_closed` removes the ``.part``.
    """
    final = closed_name(part, compress)
    if compress == "gzip":
        # here: what only reads segments' sizes (`status`) never compresses (~5 ms of imports)
        import gzip
        import shutil

        temporary = final.with_name(final.name + COMPRESSING_SUFFIX)
        with open(part, "rb") as source, open(temporary, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as target:
                shutil.copyfileobj(source, target, 1024 * 1024)
            raw.flush()
            os.fsync(raw.fileno())
        with closing(part.parent) as counted:
            os.replace(temporary, final)
            part.unlink()
            counted(final)
    else:
        with closing(part.parent) as counted:
            os.replace(part, final)
            counted(final)
    return final


def drop_if_closed(part: Path) -> bool:
    """True (and the ``.part`` removed) if a kill came after its ``.gz`` was complete."""
    if closed_name(part, "gzip").exists():
        part.unlink()
        return True
    return False


def recover_part(part: Path) -> int | None:
    """The whole-line size of an open segment found by a process holding its shard, its torn
    tail cut; None if it is gone (closed already, or no whole line in it: removed)."""
    if drop_if_closed(part):
        return None
    cut = cut_torn_tail(part)
    if cut is None:  # not a file this store may touch; left as it is
        return None
    kept, torn = cut
    if not kept:
        part.unlink()
        if torn:
            logger.warning("removed %s: a killed round left no whole line in it", part.name)
        return None
    if torn:
        logger.warning("recovered %s: kept its %d bytes of whole lines, cut %d torn bytes "
                       "(a killed round)", part.name, kept, torn)
    return kept


def remove_stale_compression(part: Path) -> None:
    """The ``.jsonl.gz.tmp`` a kill mid-compression of ``part`` left, if any."""
    gz = closed_name(part, "gzip")
    gz.with_name(gz.name + COMPRESSING_SUFFIX).unlink(missing_ok=True)


def remove_stale_compressions(directory: Path, prefix: str) -> None:
    for stale in directory.glob(f"{prefix}-*.jsonl{GZIP_SUFFIX}{COMPRESSING_SUFFIX}"):
        stale.unlink(missing_ok=True)


def whole_lines_end(fd: int, size: int | None = None) -> int:
    """The byte after the last newline of the file open as ``fd`` (of ``size`` bytes, else its
    size now): where its whole lines end. Reads only its tail, a :data:`TAIL_BLOCK` at a time."""
    keep = os.fstat(fd).st_size if size is None else size
    while keep > 0:
        start = max(0, keep - TAIL_BLOCK)
        block = os.pread(fd, keep - start, start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        keep = start
    return 0


def cut_torn_tail(part: Path) -> tuple[int, int] | None:
    """Cut a torn last line off ``part``, reading only its tail; (bytes kept, bytes cut).

    Memory is one :data:`TAIL_BLOCK` whatever the file's size. Only a regular file is touched,
    never through a symbolic link (truncating one would cut a file anywhere on the machine):
    None, with an error, for anything else.
    """
    try:
        fd = os.open(part, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        logger.error("not recovering %s: it is a symbolic link (to %s), which is never "
                     "followed; left as it is", part, os.readlink(part))
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            logger.error("not recovering %s: not a regular file; left as it is", part)
            return None
        size = info.st_size
        keep = whole_lines_end(fd, size)
        if keep != size:
            os.ftruncate(fd, keep)
            os.fsync(fd)
        return keep, size - keep
    finally:
        os.close(fd)
