"""Shared fixtures: the fake servers, and a collector wired to them."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.fakes.fixtures import *  # noqa: F403 - fake_github, fake_docs and their factories
from tests.incrawler import install_session_reactor
from tests.quietcpu import pytest_configure, pytest_runtest_protocol  # noqa: F401 - hooks
from tests.support import Collector

install_session_reactor()

pytest_plugins = ["tests.signalstate"]

# A suite started in the background by a script (`pytest … &`) inherits SIGINT ignored, as
# POSIX has a shell's background jobs do, and every runner it starts would keep ignoring it:
# the Ctrl-C tests need children that start as a terminal's foreground command does.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def collector(tmp_path: Path) -> Collector:
    """A data dir and config under tmp_path; ``collector.configure(...)`` points it anywhere."""
    return Collector(tmp_path / "collector")

