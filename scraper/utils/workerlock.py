"""One process per spider-shard: an exclusive ``flock`` on ``state/locks/{spider}-{i}of{N}.lock``.

The lock guards the spider-shard's item files and stores (a ``.part`` file is only recovered by
the process holding the lock). The kernel drops it when the process dies, however it dies.
"""

from __future__ import annotations

from pathlib import Path

from scraper.utils.pidlock import PidLockHeld, acquire_pid_lock


class WorkerLockedError(Exception):
    """Another live process holds this spider-shard."""


_held: list[int] = []  # descriptors kept open for the life of the process


def acquire_worker_lock(path: Path, label: str) -> None:
    try:
        _held.append(acquire_pid_lock(path))
    except PidLockHeld as exc:
        raise WorkerLockedError(
            f"{label} is already running (pid {exc.pid or 'unknown'}); one process per "
            "spider-shard") from None
