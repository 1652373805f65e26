"""Every test starts with the session's signal dispositions and an empty signal mask.

A test that runs the collector's code in this process can change them (``cmd_run`` ignores
SIGHUP while it starts, the supervisor and Scrapy install handlers, a worker blocks SIGTERM and
SIGINT until its engine runs). Left as they are, they reach the processes later tests start: a
signal ignored here is ignored by a child from its first instruction, until it installs its own
handler, so a Ctrl-C sent to a runner that is still starting is lost and the runner runs on.
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
