"""Shared fixtures: the fake servers, and a collector wired to them."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.support.cluster import baseline, redis_server, redis_url  # noqa: F401 - fixtures
from tests.support.collector import Collector
from tests.support.fakes.fixtures import *  # noqa: F403 - fake_github, fake_docs and their factories
from tests.support.incrawler import install_session_reactor
from tests.support.quietcpu import pytest_configure, pytest_runtest_protocol  # noqa: F401 - hooks

install_session_reactor()

pytest_plugins = ["tests.support.signalstate"]

# A suite started in the background by a script (`pytest … &`) inherits SIGINT ignored, as
# POSIX has a shell's background jobs do, and every runner it starts would keep ignoring it:
# the Ctrl-C tests need children that start as a terminal's foreground command does.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


SLOWEST_FILES = (
    "test_budget.py", "test_distributed.py", "test_benchmarks_smoke.py", "test_health.py",
    "test_ops.py", "test_cluster_search.py", "test_faults_disk.py", "test_first_hour.py",
    "test_catalog.py", "test_cluster.py", "test_runner.py", "test_faults_kills.py",
    "test_faults_input.py", "test_search_complete.py", "test_faults_hostile.py",
    "test_runner_state.py", "test_reload.py", "test_distributed_secrets.py",
    "test_autoscale.py", "test_shared_stores.py",
)
"""The files that take longest in the suite, longest first. xdist hands whole files
(``--dist loadfile``) to its workers in collection order (``--no-loadscope-reorder``): one of
these handed out last would run alone at the end, as the kill -9 file (its one test about 40 s,
``--durations`` shows) did under xdist's own order, by test count."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: place for place, name in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture
def collector(tmp_path: Path) -> Collector:
    """A data dir and config under tmp_path; ``collector.configure(...)`` points it anywhere."""
    return Collector(tmp_path / "collector")

