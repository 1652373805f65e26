"""A file that says which process holds it: an exclusive ``flock`` plus that process's pid.

The lock, not the file's existence, is the truth: a process killed with ``kill -9`` leaves the
file behind, but the kernel has already released its lock, so the next one simply takes over.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from scraper.statefile import open_private


class PidLockHeld(Exception):
    """Another live process holds the lock; ``pid`` is what it wrote (None if unreadable)."""

    def __init__(self, pid: int | None) -> None:
        super().__init__(pid)
        self.pid = pid


def acquire_pid_lock(path: Path) -> int:
    """Lock ``path`` for this process and write its pid there; the returned descriptor is the
    lock (closing it, or dying, releases it). Raises PidLockHeld."""
    fd = open_private(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise PidLockHeld(read_pid(path)) from None
    os.set_inheritable(fd, False)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
