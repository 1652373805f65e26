"""The dataset's subcommands, as ``(name, module)`` pairs for ``runner.cli.main``: each module's
``register(parser, add_config_option)`` adds its subcommand.

A module is imported only when its subcommand is named (or the whole tree is built, for
``--help`` and the docs), so ``status`` or ``metrics`` pays for none of them. The modules import
nothing heavy at load either (pyarrow, matplotlib and feedgen only when their command runs).
"""

from __future__ import annotations

DATASET_COMMANDS: list[tuple[str, str]] = [
    ("catalog", "runner.catalog.build"), ("export", "runner.catalog.export"),
    ("report", "runner.catalog.report"), ("view", "runner.catalog.viewer"),
    ("reparse", "runner.catalog.reparse"), ("history", "runner.catalog.history"),
    ("archive", "runner.catalog.pagearchive"),
]
