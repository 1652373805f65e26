"""How every ``python -m runner`` command names itself and reports a mistake the user must fix:
one line on stderr, ``python -m runner: …``, and exit status 2."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

PROG = "python -m runner"
USAGE_ERROR = 2
"""Exit status for anything the user must fix (arguments, config, a refused plan)."""
INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as shells report it."""
CUT_SHORT = 141
"""Exit status when the reader of stdout went away (``… | head``): 128 + SIGPIPE, as a program
the closed pipe ended."""
TROUBLE = 1
"""Exit status of a cron job that found the collector in trouble and could not fix it."""


class UsageError(Exception):
    """Bad arguments; the message is the one line the user sees."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a mistake is one line and exit 2, not a usage block."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def usage_error(message: str) -> int:
    """Print ``python -m runner: message`` on stderr; returns the exit status to use."""
    print(f"{PROG}: {message}", file=sys.stderr)
    return USAGE_ERROR
