"""Every test starts with the session's signal dispositions and an empty signal mask.

A test that runs the collector's code in this process can change them: ``cmd_run`` ignores
SIGHUP while it starts, and ``test_faults_input.py`` left it ignored in its pytest worker. Left
as they are, they reach the processes later tests start: a signal ignored (or blocked) here is
ignored by a child from its first instruction until it installs its own handler, so the child
no longer starts as the user's command would.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

WATCHED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD)
_baseline: dict[int, object] = {}


def pytest_configure(config: pytest.Config) -> None:
    _baseline.update({sig: signal.getsignal(sig) for sig in WATCHED})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    yield
    for sig, handler in _baseline.items():
        if signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)  # type: ignore[arg-type]
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
