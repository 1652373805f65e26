"""Running the suite in parallel (pytest-xdist) without changing what any test proves.

Two rules, applied from tests/conftest.py:

* Tests that share a module- or class-scoped fixture (one long run checked by several
  assertions, one Redis per module) go to one xdist worker (``xdist_group``, scheduled with
  ``--dist loadgroup``), so that setup is made once, as in a serial run.
* A test marked ``alone`` judges the whole machine (how busy its CPU is, as the autoscaled pool
  does): it runs while no other test runs. Every other test holds a shared lock while it runs
  (setup and teardown included); an ``alone`` one takes it exclusively. A turnstile taken
  before the lock keeps a stream of shared holders from starving an exclusive one.

Without xdist (one process) nothing is locked and no group changes anything.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

SHARED_SCOPES = frozenset({"module", "class", "package"})


def group_shared_setups(items: list[pytest.Item]) -> None:
    """Mark each test that uses a module-, class- or package-scoped fixture with its module's
    ``xdist_group``."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        scopes = {defs[-1].scope for defs in info.name2fixturedefs.values() if defs}
        if scopes & SHARED_SCOPES:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


@contextlib.contextmanager
def alone_or_shared(item: pytest.Item) -> Iterator[None]:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    # Workers' basetemps are <session basetemp>/popen-gwN: the parent is the run's own.
    base = Path(item.config._tmp_path_factory.getbasetemp()).parent  # type: ignore[attr-defined]
    alone = item.get_closest_marker("alone") is not None
    with (_flock(base / "alone.turnstile", fcntl.LOCK_EX, release_early=not alone) as turnstile,
          _flock(base / "alone.lock", fcntl.LOCK_EX if alone else fcntl.LOCK_SH)):
        turnstile()
        yield


@contextlib.contextmanager
def _flock(path: Path, mode: int, release_early: bool = False) -> Iterator[Callable[[], None]]:
    """``path`` locked in ``mode``; yields a function that releases it before the block ends
    (a no-op unless ``release_early``)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    released = False

    def release() -> None:
        nonlocal released
        if release_early and not released:
            fcntl.flock(fd, fcntl.LOCK_UN)
            released = True

    try:
        fcntl.flock(fd, mode)
        yield release
    finally:
        os.close(fd)  # releases whatever is still held
