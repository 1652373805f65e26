"""pytest fixtures for the fake servers; import them into a conftest.py.

    from tests.support.fakes.fixtures import fake_docs, fake_github  # noqa: F401

Options can be passed by indirect parametrization::

    @pytest.mark.parametrize("fake_github", [{"search_limit": 5}], indirect=True)

or several differently configured servers started with the ``*_factory`` fixtures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .launcher import FakeServer, start_fake_docs, start_fake_github, start_fake_hostile

__all__ = ["fake_docs", "fake_docs_factory", "fake_github", "fake_github_factory",
           "fake_hostile"]


def _serve(start: Callable[..., FakeServer], directory: Path,
           request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    """One server, with the options of an indirect parametrization, stopped after the test."""
    server = start(directory, **dict(getattr(request, "param", None) or {}))
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def fake_github(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FakeServer]:
    yield from _serve(start_fake_github, tmp_path / "fake-github", request)


@pytest.fixture
def fake_docs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FakeServer]:
    yield from _serve(start_fake_docs, tmp_path / "fake-docs", request)


def _factory(
    start: Callable[..., FakeServer], directory: Path
) -> Iterator[Callable[..., FakeServer]]:
    started: list[FakeServer] = []

    def make(**options: Any) -> FakeServer:
        server = start(directory, **options)
        started.append(server)
        return server

    try:
        yield make
    finally:
        for server in started:
            server.kill()


@pytest.fixture
def fake_github_factory(tmp_path: Path) -> Iterator[Callable[..., FakeServer]]:
    yield from _factory(start_fake_github, tmp_path / "fake-github")


@pytest.fixture
def fake_docs_factory(tmp_path: Path) -> Iterator[Callable[..., FakeServer]]:
    yield from _factory(start_fake_docs, tmp_path / "fake-docs")


@pytest.fixture
def fake_hostile(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FakeServer]:
    """The hostile server (tests/support/fakes/hostile.py): 5xx storms, resets, hangs, huge
    bodies…"""
    yield from _serve(start_fake_hostile, tmp_path / "fake-hostile", request)
