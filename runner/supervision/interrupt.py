"""A Ctrl-C while the runner starts is never lost.

Until the supervisor installs its own handlers, SIGINT raises ``KeyboardInterrupt`` as Python's
default handler does, and is also remembered. Python runs a signal's handler wherever the main
thread happens to be, a weakref callback or ``__del__`` that the garbage collector runs in the
middle of an import included, and an exception raised there is printed as "Exception ignored"
and dropped: the runner went on to start its workers as if nothing had been pressed (seen on a
busy machine). The supervisor asks :func:`raise_if_interrupted` once its own handlers
are in place, so an interrupt that was swallowed before then still ends the start.
"""

from __future__ import annotations

import signal
from types import FrameType

_interrupted = False


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def remember_interrupts() -> None:
    """Take over Python's default SIGINT handler (an ignored SIGINT stays ignored, as the
    process's starter asked)."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def raise_if_interrupted() -> None:
    """``KeyboardInterrupt`` if a Ctrl-C came since :func:`remember_interrupts`, even one whose
    exception was swallowed."""
    if _interrupted:
        raise KeyboardInterrupt
