"""A file that says which process holds it: an exclusive ``flock`` plus that process's pid.

The lock, not the file's existence, is the truth: a process killed with ``kill -9`` leaves the
file behind, but the kernel has already released its lock, so the next one simply takes over.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scraper.utils.statefile import open_private


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class PidLockHeld(Exception):
    """Another live process holds the lock; ``pid`` is what it wrote (None if unreadable)."""

    def __init__(self, pid: int | None) -> None:
        super().__init__(pid)
        self.pid = pid


class LockFileError(OSError):
    """The lock file cannot be made or written (a read-only or full ``data_dir``): one line for
    the user, with the errno kept so a full disk is still told apart."""


def acquire_pid_lock(path: Path) -> int:
    """Lock ``path`` for this process and write its pid there; the returned descriptor is the
    lock (closing it, or dying, releases it). Raises PidLockHeld or LockFileError."""
    try:
        fd = open_private(path, os.O_RDWR | os.O_NOFOLLOW)
    except OSError as exc:
        raise _unwritable(path, exc) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise PidLockHeld(read_pid(path)) from None
    os.set_inheritable(fd, False)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError as exc:
        os.close(fd)
        raise _unwritable(path, exc) from None
    return fd


def _unwritable(path: Path, exc: OSError) -> LockFileError:
    return LockFileError(exc.errno, f"cannot write the lock file {path}: {exc.strerror}; "
                         "data_dir must be writable")


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


@contextmanager
def exclusive_or_skip(path: Path) -> Iterator[bool]:
    """Yields True while holding the lock on ``path``, False when another process holds it: the
    second of two runs of one job steps aside (the cron jobs, the catalog, a box's shipper)."""
    fd = open_private(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        # os.open's descriptors are close-on-exec (PEP 446): the runner the watchdog starts
        # does not inherit the lock, which is released when this run ends.
        yield True
    finally:
        os.close(fd)
