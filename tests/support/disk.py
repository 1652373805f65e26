"""A small real filesystem (tmpfs) to fill: what a full disk does to the collector."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _can_mount() -> str | None:
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    return None


@contextlib.contextmanager
def tmpfs(mount: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at ``mount`` (made if missing) for the block; skips the test without
    root or mount support."""
    reason = _can_mount()
    if reason:
        pytest.skip(reason)
    mount.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
