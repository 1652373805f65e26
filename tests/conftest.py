"""Shared fixtures: the fake servers, and a collector wired to them; and how the suite shares
the machine when pytest-xdist runs it in several processes (``-n``, pyproject's addopts)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.fixtures import *  # noqa: F403 - fake_github, fake_docs and their factories
from tests.parallel import alone_or_shared, group_shared_setups
from tests.support import Collector


@pytest.fixture
def collector(tmp_path: Path) -> Collector:
    """A data dir and config under tmp_path; ``collector.configure(...)`` points it anywhere."""
    return Collector(tmp_path / "collector")


@pytest.hookimpl(tryfirst=True)  # before xdist turns xdist_group marks into its groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    group_shared_setups(items)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outermost: a wait for the lock is no test time
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    with alone_or_shared(item):
        yield
