"""One run of a cron job at a time: a non-blocking ``flock`` on a file under ``state/``.

Cron starts the watchdog every five minutes whether or not the last run has finished (a restart
can take a minute), and a user may run it by hand meanwhile. The second run simply steps aside:
the first one is already doing the job, and two would report (or restart) the same thing twice.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scraper.statefile import open_private


@contextmanager
def exclusive_or_skip(path: Path) -> Iterator[bool]:
    """Yields True while holding the lock on ``path``, False when another process holds it."""
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
