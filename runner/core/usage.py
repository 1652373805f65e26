"""How every ``python -m runner`` command names itself and reports a mistake the user must fix:
one line on stderr, ``python -m runner: …``, and exit status 2."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn

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


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``, without importing shutil (and with it bz2 and
    lzma, ~3 ms of every ``status``): ``$COLUMNS``, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class TerminalHelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, sized by :func:`terminal_columns`. argparse makes one for
    every option it adds, help printed or not."""

    def __init__(self, prog: str, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("width") is None and len(args) < 3:
            kwargs["width"] = terminal_columns() - 2
        super().__init__(prog, *args, **kwargs)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a mistake is one line and exit 2, not a usage block."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", TerminalHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def usage_error(message: str) -> int:
    """Print ``python -m runner: message`` on stderr; returns the exit status to use."""
    print(f"{PROG}: {message}", file=sys.stderr)
    return USAGE_ERROR
