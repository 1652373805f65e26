"""One runner per data dir: an ``fcntl``-locked pidfile at ``state/runner.pid``.

The lock, not the file's existence, is the truth: a runner killed with ``kill -9`` leaves the file
behind, but the kernel has already released its lock, so the next runner simply takes over.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class RunnerRunningError(Exception):
    def __init__(self, pid: int | None) -> None:
        super().__init__(pid)
        self.pid = pid


class PidFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunnerRunningError(read_pid(self.path)) from None
        os.set_inheritable(fd, False)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def running_pid(path: Path) -> int | None:
    """The pid of the runner holding the lock, or None when no runner holds it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return read_pid(path)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
