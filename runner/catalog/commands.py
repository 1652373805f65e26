"""The dataset's subcommands, as ``(name, register)`` pairs for ``runner.cli.main``.

The modules import nothing heavy at load (pyarrow, matplotlib and feedgen only when their
command runs), so building the parser stays cheap for every runner command.
"""

from __future__ import annotations

from collections.abc import Callable

from runner.catalog import build, export, history, pagearchive, reparse, report, viewer


def dataset_commands() -> list[tuple[str, Callable[..., None]]]:
    return [("catalog", build.register), ("export", export.register),
            ("report", report.register), ("view", viewer.register),
            ("reparse", reparse.register), ("history", history.register),
            ("archive", pagearchive.register)]
