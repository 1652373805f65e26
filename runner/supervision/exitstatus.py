"""How a child process ended, as the runner's log and status say it."""

from __future__ import annotations

import os
import signal

from scraper.utils.outcome import NOTHING_FETCHED_EXIT


def describe_exit(status: int) -> tuple[bool, str]:
    """(succeeded, ``exit 1`` / ``killed by SIGKILL``) from a ``waitpid`` status."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return False, f"killed by {signal.Signals(sig).name}"
    code = os.waitstatus_to_exitcode(status)
    if code == NOTHING_FETCHED_EXIT:  # a round that ended: health judges what it fetched
        return True, f"exit {code} (round fetched nothing)"
    return code == 0, f"exit {code}"
