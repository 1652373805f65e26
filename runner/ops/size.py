"""``python -m runner size --every 100MB [--target 10GB]``: one line per size milestone.

Run by cron every few minutes (``scripts/size_monitor.sh``). It prints ``data: 1.2 GB (+100 MB)
of 10 GB`` when ``data_dir`` has crossed a multiple of ``--every`` above the last one reported,
and nothing otherwise. The last milestone reported is kept in bytes in ``state/size_mark``, so
changing ``--every`` later keeps counting from where the reports were.

A run with no mark yet counts from zero: it speaks if ``data_dir`` already holds at least one
step (a monitor installed late tells you once where things stand), else it stays silent. When
the data shrinks by more than a step below the mark (the user moved items away), the mark
follows it down silently; smaller dips (a database checkpoint) leave it where it is.

The same run does the housekeeping: rotated logs (``*.log.N``) older than ``logs_keep_days`` are
removed, the value the runner runs on (its resolved record, as the watchdog reads it): an edit
not yet reloaded waits for the run that reads it. Items are never pruned: they are the product.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from pathlib import Path

from runner.core.argtypes import size_bytes
from runner.core.resolved import run_config
from runner.core.usage import usage_error
from runner.ops.notify import say
from scraper.config.collector import CollectorConfig
from scraper.utils.layout import DataLayout
from scraper.utils.pidlock import exclusive_or_skip
from scraper.utils.statefile import write_atomic
from scraper.utils.units import format_size

ROTATED_LOG = re.compile(r"\.log\.\d+$")


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = "Print one line when data_dir crosses the next size milestone."
    add_config_option(parser)
    parser.add_argument("--every", type=size_bytes, required=True, metavar="SIZE",
                        help="the milestone step, e.g. 100MB, 1.5G, 2GiB")
    parser.add_argument("--target", type=size_bytes, metavar="SIZE",
                        help="shown as '… of SIZE' in each line")
    parser.set_defaults(handler=cmd_size)


def cmd_size(args: argparse.Namespace, config: CollectorConfig) -> int:
    config = run_config(config)  # the running run's logs_keep_days, not an unreloaded edit's
    layout = DataLayout(config.data_dir)
    remove_old_rotated_logs(layout.logs_dir, config.logs_keep_days)
    if not layout.root.is_dir():
        return 0  # nothing collected yet: nothing to say
    mark_file = layout.size_mark
    try:
        with exclusive_or_skip(layout.size_mark_lock) as locked:
            if not locked:
                return 0  # another run is measuring right now and will speak if needed
            line = check_milestone(layout.root, mark_file, args.every, args.target)
    except OSError as exc:
        return usage_error(f"size: cannot keep the mark in {mark_file}: {exc.strerror}")
    if line:
        say(config, line)
    return 0


def check_milestone(root: Path, mark_file: Path, step: int, target: int | None) -> str | None:
    """The line to print when ``root`` has crossed a new multiple of ``step``; updates the mark."""
    from runner.core.datasize import data_bytes  # the same measure as `status` (disk blocks)

    size = data_bytes(DataLayout(root))
    mark = read_mark(mark_file)
    reached = size // step * step
    if reached > mark:
        write_mark(mark_file, reached)
        target_text = f" of {_round_size(target)}" if target else ""
        return f"data: {format_size(size)} (+{_round_size(reached - mark)}){target_text}"
    if size < mark - step:
        # Shrunk by more than a step (items moved away): count from here. Within one step it is
        # only a database checkpoint or a log rotation, and must not re-announce a milestone.
        write_mark(mark_file, reached)
    return None


def _round_size(size: int) -> str:
    """``10 GB``, not ``10.0 GB``: steps and targets are round numbers as the user typed them."""
    text = format_size(size)
    return text.replace(".0 ", " ")


def read_mark(path: Path) -> int:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return 0
    return int(text) if text.isdigit() else 0


def write_mark(path: Path, mark: int) -> None:
    write_atomic(path, f"{mark}\n")


def remove_old_rotated_logs(logs_dir: Path, keep_days: int, now: float | None = None) -> int:
    """Delete ``*.log.N`` under ``logs_dir`` not modified for ``keep_days``; returns how many.

    Only rotated files: a live ``.log`` may be quiet for weeks (a spider with weight 0) and is
    still the file its process writes to.
    """
    if not logs_dir.is_dir():
        return 0
    cutoff = (now if now is not None else time.time()) - keep_days * 86400
    removed = 0
    for path in logs_dir.rglob("*.log.*"):
        if not ROTATED_LOG.search(path.name):
            continue
        try:
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except OSError:
            pass  # gone already, or not ours to remove: housekeeping never fails the check
    return removed
