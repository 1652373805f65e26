"""One process per spider-shard: an exclusive ``flock`` on ``state/locks/{spider}-{i}of{N}.lock``.

The lock guards the spider-shard's item files and stores (a ``.part`` file is only recovered by
the process holding the lock). The kernel drops it when the process dies, however it dies.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class WorkerLockedError(Exception):
    """Another live process holds this spider-shard."""


_held: list[int] = []  # descriptors kept open for the life of the process


def acquire_worker_lock(path: Path, label: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise WorkerLockedError(
            f"{label} is already running (pid {holder}); one process per spider-shard"
        ) from None
    os.set_inheritable(fd, False)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held.append(fd)
