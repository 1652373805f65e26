"""One runner per data dir: a pid lock (:mod:`scraper.utils.pidlock`) at ``state/runner.pid``."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from scraper.utils.pidlock import acquire_pid_lock, read_pid


class PidFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self) -> None:
        """Raises PidLockHeld, naming the running runner's pid."""
        self.fd = acquire_pid_lock(self.path)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


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
