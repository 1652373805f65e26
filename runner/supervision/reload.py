"""Reloading the config on purpose: SIGHUP, or ``python -m runner reload``, as nginx's reload.

The runner reads collector.yaml once, at start; an edit changes nothing until a reload. On
SIGHUP the runner reads the file again: a valid one is re-planned and used from each worker's
next round, with one log line saying what changed; an invalid one is one log line and the
running config stays; a change that needs a restart (``data_dir``, ``redis_url``) is refused
with one line. The outcome is also written to ``state/reload.json`` for the ``reload`` command.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runner.core.usage import PROG, usage_error
from scraper.config.collector import CollectorConfig
from scraper.utils.layout import DataLayout
from scraper.utils.statefile import read_json, write_json_atomic

RESTART_ONLY = ("data_dir", "redis_url")
"""What a running runner cannot change: every process of the run must agree on them."""
WAIT = 15.0
"""Seconds ``reload`` waits for the runner's answer (its loop wakes at once on SIGHUP)."""
IGNORED = ("source",)


@dataclass(frozen=True, slots=True)
class ReloadResult:
    ok: bool
    message: str
    pid: int
    at: float


def config_changes(old: CollectorConfig, new: CollectorConfig) -> list[str]:
    """Key paths whose value differs (``docs.start_urls``, ``round_interval``), in config order."""
    changed = []
    for f in dataclasses.fields(old):
        if f.name in IGNORED:
            continue
        before, after = getattr(old, f.name), getattr(new, f.name)
        if before == after:
            continue
        if dataclasses.is_dataclass(before):
            changed += [f"{f.name}.{g.name}" for g in dataclasses.fields(before)
                        if getattr(before, g.name) != getattr(after, g.name)]
        else:
            changed.append(f.name)
    return changed


def refusal(old: CollectorConfig, new: CollectorConfig) -> str | None:
    """Why ``new`` cannot replace ``old`` in a running runner, or None."""
    for name in RESTART_ONLY:
        if getattr(old, name) != getattr(new, name):
            return (f"{name} changed ({_shown(name, getattr(old, name))} → "
                    f"{_shown(name, getattr(new, name))}): needs a restart "
                    f"('{PROG} stop', then start it again); the running config stays")
    return None


def _shown(name: str, value: Any) -> str:
    if name == "redis_url" and value:
        from scraper.utils.urlmask import mask_url

        return mask_url(value)
    return str(value)


def write_result(layout: DataLayout, ok: bool, message: str) -> None:
    write_json_atomic(layout.reload_file, {"ok": ok, "message": message, "pid": os.getpid(),
                                           "at": time.time()})


def read_result(layout: DataLayout) -> ReloadResult | None:
    data = read_json(layout.reload_file)
    try:
        return ReloadResult(bool(data["ok"]), str(data["message"]), int(data["pid"]),
                            float(data["at"])) if data else None
    except (ValueError, KeyError, TypeError):
        return None


# --- python -m runner reload -------------------------------------------------------------------


def register(parser: argparse.ArgumentParser,
             add_config: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = ("Make the running runner read its config file again (SIGHUP); "
                          "prints what changed, or why nothing did")
    add_config(parser)
    parser.set_defaults(handler=cmd_reload)


def cmd_reload(args: argparse.Namespace, config: CollectorConfig) -> int:
    from runner.core.pidfile import running_pid

    layout = DataLayout(config.data_dir)
    pid = running_pid(layout.runner_pidfile)
    if pid is None:
        return usage_error(f"no runner is running on {config.data_dir} (a runner keeps the "
                           "data_dir it started with until it is restarted)")
    before = read_result(layout)
    sent = time.time()
    os.kill(pid, signal.SIGHUP)
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        result = read_result(layout)
        if result is not None and result.pid == pid and result != before and result.at >= sent:
            print(result.message, file=sys.stdout if result.ok else sys.stderr, flush=True)
            return 0 if result.ok else 1
        time.sleep(0.1)
    print(f"{PROG}: runner pid {pid} did not answer the reload within {WAIT:.0f} s; see "
          f"{layout.runner_log}", file=sys.stderr)
    return 1
