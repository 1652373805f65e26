"""A full disk is not a crash: writers stop cleanly and the runner waits for space.

A worker that hits ENOSPC/EDQUOT closes its round with the finish reason ``disk_full`` and exits
with :data:`DISK_FULL_EXIT`; the runner then stops forking, shows it in ``status``, and resumes by
itself once ``data_dir`` has :data:`RESUME_FREE_BYTES` free again.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from scraper.statefile import open_private

DISK_FULL_EXIT = 4
"""Exit status of ``scrapy crawl`` when the data disk is full."""
DISK_FULL_REASON = "disk_full"
"""The finish reason of a round closed because the data disk is full."""
START_FREE_BYTES = 1024 * 1024
"""A worker does not start with less free space than this: it could not close its round."""
RESUME_FREE_BYTES = 8 * 1024 * 1024
"""The runner resumes forking once this much is free again."""

_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}


def is_disk_full(exc: BaseException) -> bool:
    """True for "no space left" and "quota exceeded", from the OS or from SQLite."""
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        return True
    return "database or disk is full" in str(exc)


def free_bytes(path: Path) -> int:
    """Free space for an unprivileged writer on the filesystem holding ``path``."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


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
