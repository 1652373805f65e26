"""``@pytest.mark.needs_idle_cpu``: a test that runs with no other test of the session at once.

The suite runs its files on several pytest-xdist workers at a time. A few tests judge what the
runner does with an idle CPU (the autoscaled pool grows only while the machine's CPU is free),
and no other test may run beside them. Every test takes a shared lock for its whole protocol
(setup, call, teardown: a module fixture's crawl counts), a marked one takes it exclusive. A
turnstile lock in front keeps new tests from starting while a marked one waits, so it never
starves. Both are ``flock`` locks on files shared by the session's workers: a worker that dies
releases them with its process. Without xdist there is one test at a time and no lock.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MARK = "needs_idle_cpu"


def _lock_dir() -> Path | None:
    """The directory every worker of this xdist run shares, or None outside xdist."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return None
    directory = Path(tempfile.gettempdir()) / f"hubcollect-tests-{run}"
    directory.mkdir(mode=0o700, exist_ok=True)
    return directory


@contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # releases the lock


@contextmanager
def machine_turn(exclusive: bool) -> Iterator[None]:
    directory = _lock_dir()
    if directory is None:
        yield
        return
    with _flock(directory / "turnstile", fcntl.LOCK_EX):
        fd = os.open(directory / "machine", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    try:
        yield
    finally:
        os.close(fd)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    with machine_turn(exclusive=item.get_closest_marker(MARK) is not None):
        yield


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARK}: runs with no other test of the session at once "
                                       "(it judges an idle CPU)")
