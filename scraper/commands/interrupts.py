"""A Ctrl-C while ``scrapy crawl`` starts: one line and exit 130, never a traceback.

Python answers SIGINT with ``KeyboardInterrupt`` wherever the main thread is, and a start is
mostly imports and component constructors: 14 to 59 lines of traceback, then death by SIGINT.
Until Scrapy's own handlers take over (its graceful stop, once the reactor runs) the command's
own handler says ``scrapy crawl: interrupted`` and exits 130 at once: nothing of the round has
been written that a ``kill -9`` would not leave as sound (pipelines/itemstore.py). Once the
engine runs, a Ctrl-C is Scrapy's graceful stop, and the round's end is noted as interrupted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, NoReturn

INTERRUPTED_EXIT = 130
"""``scrapy crawl``'s exit status after a Ctrl-C (128 + SIGINT), as shells report it."""


def exit_on_interrupt(prog: str) -> bool:
    """Make SIGINT end the process with one line and :data:`INTERRUPTED_EXIT`; only where it
    is Python's default (ignored in a background job, held by the runner in its workers: left
    as it is). True when it was installed."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    line = f"{prog}: interrupted\n".encode()

    def interrupted(signum: int, frame: FrameType | None) -> None:
        os.write(2, line)
        os._exit(INTERRUPTED_EXIT)

    signal.signal(signal.SIGINT, interrupted)
    return True


def note_interrupts(noted: Callable[[], None]) -> None:
    """Call ``noted`` on a SIGINT before the handler in place now (Scrapy's graceful stop)."""
    current = signal.getsignal(signal.SIGINT)
    if not callable(current):
        return
    handler: Callable[[int, FrameType | None], Any] = current

    def noting(signum: int, frame: FrameType | None) -> Any:
        noted()
        return handler(signum, frame)

    signal.signal(signal.SIGINT, noting)


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` now, its output flushed and its log handlers closed.

    Python gives its signals back to the system's default as it finalizes, a few hundred ms
    after a crawl (modules, the reactor's objects, the collector): a Ctrl-C then would kill the
    process by SIGINT, with no line and no exit status of its own. By the time a round's command
    returns, everything it writes is written and closed."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
