"""A full disk is not a crash: writers stop cleanly and the runner waits for space.

A worker that hits ENOSPC/EDQUOT closes its round with the finish reason ``disk_full`` and exits
with :data:`DISK_FULL_EXIT`; the runner then stops forking, shows it in ``status``, and resumes by
itself once ``data_dir`` has :data:`RESUME_FREE_BYTES` free again. Every writer — the item store,
and every SQLite store (deltafetch, content hashes, the GitHub budget), whichever meets the full
disk first — goes through :func:`report_disk_full`: one ``disk full:`` line, one round closed.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from scraper.utils.statefile import open_private

# Scrapy is imported where the guard uses it: the stores and data_size are also used by the
# runner's commands (catalog, status), which would otherwise import it at every start.
if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

DISK_FULL_EXIT = 4
"""Exit status of ``scrapy crawl`` when the data disk is full."""
DISK_FULL_REASON = "disk_full"
"""The finish reason of a round closed because the data disk is full."""
START_FREE_BYTES = 1024 * 1024
"""A worker does not start with less free space than this: it could not close its round."""
RESUME_FREE_BYTES = 8 * 1024 * 1024
"""The runner resumes forking once this much is free again."""

_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
_SQLITE_FULL_CODES = {sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR_SHMSIZE}
"""SQLite says "disk I/O error" (IOERR_SHMSIZE) when a full disk stops the -shm file growing."""


def is_disk_full(exc: BaseException) -> bool:
    """True for "no space left" and "quota exceeded", from the OS or from SQLite."""
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        return True
    if getattr(exc, "sqlite_errorcode", None) in _SQLITE_FULL_CODES:
        return True
    return "database or disk is full" in str(exc)


class DiskFullGuard:
    """Extension: ends the round once, the same way, whichever writer meets the full disk.

    Stores are opened by many components (and the budget's by a downloader middleware, lazily),
    so they report through the module-level :func:`report_disk_full` rather than each holding
    the crawler; a worker process runs exactly one crawler, which this guard is.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.reported = False
        self.running = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DiskFullGuard:
        from scrapy import signals

        global _guard
        guard = _guard = cls(crawler)
        crawler.signals.connect(guard.engine_started, signal=signals.engine_started)
        return guard

    def engine_started(self) -> None:
        self.running = True

    def report(self, what: str, exc: BaseException) -> bool:
        """Log the one ``disk full:`` line and close the round; False if already reported."""
        if self.reported:
            return False
        self.reported = True
        self.crawler.stats.set_value("diskspace/full", what)
        logger.error("disk full: %s (%s); closing this round", what,
                     getattr(exc, "strerror", None) or exc)
        # While the spider opens, the component that failed raises CloseSpider instead.
        if self.running and self.crawler.engine.spider is not None:
            from scrapy.utils.defer import deferred_from_coro

            deferred_from_coro(self.crawler.engine.close_spider_async(reason=DISK_FULL_REASON))
        return True


_guard: DiskFullGuard | None = None


def report_disk_full(what: str, exc: BaseException) -> bool:
    """Report a full disk met while ``what`` (e.g. "cannot write items to PATH"); True for the
    first report of this round. Outside a crawl (no guard) it only logs."""
    if _guard is not None:
        return _guard.report(what, exc)
    logger.error("disk full: %s (%s)", what, getattr(exc, "strerror", None) or exc)
    return True


@contextmanager
def round_closed_when_full() -> Iterator[None]:
    """Around opening a store: a full disk closes the round before it starts (exit 4) through
    CloseSpider, which Scrapy honours from a pipeline's open and from a spider_opened handler."""
    try:
        yield
    except (OSError, sqlite3.OperationalError) as exc:
        if not is_disk_full(exc):
            raise
        report_disk_full("cannot open a store", exc)  # a no-op if the store reported it
        from scrapy.exceptions import CloseSpider

        raise CloseSpider(DISK_FULL_REASON) from None


@contextmanager
def skipped_when_full() -> Iterator[None]:
    """Around a store write the next round makes good (a page's record or its links: at worst a
    page is fetched again): on a full disk the write is skipped, never a traceback, and the
    round closes. (A content hash is not skipped so: its item's line is taken back.)"""
    try:
        yield
    except (OSError, sqlite3.OperationalError) as exc:
        if not is_disk_full(exc):
            raise
        report_disk_full("cannot write a store", exc)


def free_bytes(path: Path) -> int:
    """Free space for an unprivileged writer on the filesystem holding ``path``."""
    while not path.exists() and path != path.parent:
        path = path.parent
    # shutil.disk_usage's own sum, without importing shutil (bz2, lzma) in `status`
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


class DiskReserve:
    """A small ballast file the runner keeps under ``state/`` and deletes when the disk fills,
    so that it can still write ``status.json`` and its log to say so."""

    SIZE = 512 * 1024

    def __init__(self, path: Path) -> None:
        self.path = path

    def ensure(self) -> None:
        if self.path.exists() and self.path.stat().st_size >= self.SIZE:
            return
        try:
            with os.fdopen(open_private(self.path, os.O_WRONLY | os.O_TRUNC), "wb") as handle:
                handle.write(b"\0" * self.SIZE)  # real blocks, not a sparse hole
                handle.flush()
        except OSError:
            self.release()  # not even room for the reserve: leave what space there is

    def release(self) -> None:
        self.path.unlink(missing_ok=True)


def data_size(root: Path) -> int:
    """Bytes on disk under ``root`` (allocated blocks, as ``du``), links not followed."""
    total = 0
    for directory, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_blocks * 512
    return total


def probe_writable(directory: Path) -> None:
    """OSError naming ``directory`` unless a file can be made in it (a read-only mount, or one
    that is not this user's): found before the round, not as a traceback at its first item."""
    directory.mkdir(parents=True, exist_ok=True)
    probe = directory / f".write-probe-{os.getpid()}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(directory)) from None
    probe.unlink()
