"""Who answers a Ctrl-C while an inspection command starts: the command's own one-line handler
(scraper/commands/interrupts.py) for ``fetch`` and ``parse``, the console for ``shell``."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Iterator

import pytest
from scrapy.commands import ScrapyCommand
from scrapy.settings import Settings

from scraper.commands import fetch, parse, shell


@pytest.fixture
def default_sigint() -> Iterator[None]:
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def sigint_after_options(command: ScrapyCommand) -> object:
    command.settings = Settings()
    command.add_options(argparse.ArgumentParser())
    return signal.getsignal(signal.SIGINT)


@pytest.mark.parametrize("module", [fetch, parse])
def test_fetch_and_parse_take_a_ctrl_c_during_their_start(default_sigint: None,
                                                          module: object) -> None:
    handler = sigint_after_options(module.Command())  # type: ignore[attr-defined]
    assert handler is not signal.default_int_handler
    assert getattr(handler, "__name__", "") == "interrupted"


def test_shell_leaves_ctrl_c_to_its_console(default_sigint: None) -> None:
    assert sigint_after_options(shell.Command()) is signal.default_int_handler


def test_a_ctrl_c_held_elsewhere_is_left_alone() -> None:
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job's, or the runner's workers'
    try:
        assert sigint_after_options(fetch.Command()) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
