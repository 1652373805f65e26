"""Poisoned files the collector reads back: one line each, never a traceback, never a guard off."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from runner.supervision.memoryguard import WORKER_PSS_GUESS, MemoryGuard


@pytest.mark.parametrize("text", ['{"worker_pss": Infinity}', '{"worker_pss": -5}',
                                  '{"worker_pss": 1e400}', '{"worker_pss": NaN}',
                                  '{"worker_pss": "big"}', '{"worker_pss": true}',
                                  '{"worker_pss": 0}'])
def test_memory_json_with_an_impossible_figure_is_ignored_and_the_guard_stays_on(
        tmp_path: Path, text: str, caplog: pytest.LogCaptureFixture) -> None:
    state = tmp_path / "memory.json"
    state.write_text(text)
    guard = MemoryGuard(state, budget=1024 * 1024 * 1024, budget_source="test")
    with caplog.at_level(logging.WARNING, logger="runner.supervision.memoryguard"):
        estimates = [guard.estimate(workers) for workers in (1, 50)]
    assert [(e.per_worker, e.per_worker_measured) for e in estimates] == [
        (WORKER_PSS_GUESS, False)] * 2
    assert not estimates[1].fits  # 50 guessed workers do not fit 1 GB: the guard refuses
    lines = [r.getMessage() for r in caplog.records if r.name == "runner.supervision.memoryguard"]
    assert len(lines) == 1 and str(state) in lines[0] and "ignored" in lines[0], lines
