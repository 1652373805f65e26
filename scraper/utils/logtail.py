"""The line that says why a process failed, read back from the end of its log.

A crawl that cannot start (a component's constructor raised, a class path that does not
import) has Scrapy write the traceback into the log file and exit 1: the exit status alone says
nothing. The cause is the last of: the exception line that ends a traceback, an ERROR or
CRITICAL line, a command's own one-line refusal (``scrapy crawl: …``, which a worker's stderr
writes into its log). The runner puts it in ``status`` and runner.log, ``scrapy crawl`` on
stderr.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

TAIL_BYTES = 64 * 1024
"""Bytes read from the end: a traceback and the lines after it fit many times over."""
CAUSE_MAX = 300
"""Characters kept of the line: one line of ``status``, whole enough to say what to fix."""
_TRACEBACK = "Traceback (most recent call last):"
# scraper/settings.py's format, Scrapy's default: "2026-01-02 03:04:05 [name] ERROR: message"
_LOGGED_ERROR = re.compile(r"^\S+ \S+ \[[^\]]+\] (?:ERROR|CRITICAL): (.*)$")
_COMMAND_ERROR = re.compile(r"^scrapy [a-z]+: (.*)$")


def tail_lines(path: Path, offset: int = 0) -> list[str]:
    """The lines written to ``path`` since it was ``offset`` bytes long (all of it when it is
    shorter now: rotated), at most the last :data:`TAIL_BYTES`; [] when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            start = offset if 0 <= offset <= size else 0
            start = max(start, size - TAIL_BYTES)
            handle.seek(start)
            data = handle.read()
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()


def failure_line(lines: list[str]) -> str | None:
    """The last failure ``lines`` tell of (see the module's docstring), or None."""
    found: tuple[int, str] | None = None
    last = max((i for i, line in enumerate(lines) if line.endswith(_TRACEBACK)), default=None)
    if last is not None:
        found = next(((i, line) for i, line in enumerate(lines[last + 1:], last + 1)
                      if line and not line[0].isspace()), None)
    for i in range(len(lines) - 1, -1, -1):
        if found is not None and i <= found[0]:
            break
        said = _LOGGED_ERROR.match(lines[i]) or _COMMAND_ERROR.match(lines[i])
        if said:
            found = (i, said.group(1))
            break
    return _cut(found[1]) if found else None


def last_failure(path: Path, offset: int = 0) -> str | None:
    """:func:`failure_line` of what ``path`` got since it was ``offset`` bytes long."""
    return failure_line(tail_lines(path, offset))


def _cut(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= CAUSE_MAX else line[:CAUSE_MAX - 1] + "…"
