"""Reading a small file someone else controls: a regular file only, never more than a cap.

``open()`` on a FIFO waits for a writer, and ``read()`` on ``/dev/zero`` (or a symlink to it)
never ends: a config or token file replaced by one would hang or exhaust whoever reads it. The
file is opened without blocking, judged by ``fstat`` on the descriptor it read (so a rename
between a check and the open cannot slip another file in), and read up to one byte past the cap.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


class NotARegularFile(OSError):
    """``path`` is not a regular file, or is larger than the cap; ``reason`` says which."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason


def read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of ``path``, a regular file (symlinks followed) of at most ``limit`` bytes.

    Raises :class:`NotARegularFile` for anything else, ``FileNotFoundError`` and the other
    ``OSError``\\ s as ``open`` does.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise NotARegularFile(path, f"is {kind}, not a regular file")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise NotARegularFile(path, f"is larger than {limit:,} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)
