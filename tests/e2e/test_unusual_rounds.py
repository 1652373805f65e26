"""Stuck but not failing: a real runner against the fake GitHub, whose trending page loses rows
(its ``generation`` leaves out the page's first rows), says so once in the worker's log, in
``status`` and from the watchdog, and once again when the rows are back."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.collector import Collector, wait_for
from tests.support.ops import Ops

ROWS_GONE = 5
"""Rows the fake leaves out: 20 of 25, past a ratio of 0.9 and short of the trending parse's
own markup-drift check (half the rows), whose line would stand for this one."""


def worker_file(ops: Ops) -> dict[str, Any]:
    path = ops.layout.workers_state_dir / "trending-0of1.json"
    return json.loads(path.read_text()) if path.exists() else {}


def rounds_kept(ops: Ops) -> int:
    path = ops.layout.state_dir / "rounds" / "trending-0of1.json"
    return len(json.loads(path.read_text())["rounds"]) if path.exists() else 0


def log_lines(ops: Ops, pattern: str) -> list[str]:
    text = (ops.collector.data_dir / "logs" / "trending-0of1.log").read_text()
    return [line for line in text.splitlines() if re.search(pattern, line)]


@pytest.mark.timeout(400)
def test_rows_gone_give_one_line_each_in_log_status_watchdog_and_one_when_back(
        tmp_path: Path, fake_github: Any) -> None:
    ops = Ops(Collector(tmp_path / "c"))
    try:
        rows_gone_and_back(ops, fake_github)
    finally:
        ops.cleanup()


def rows_gone_and_back(ops: Ops, fake_github: Any) -> None:
    ops.collector.configure(github=fake_github, stop_timeout=3, spiders={"trending": {
        "languages": [""], "periods": ["daily"],
        "settings": {"ROUND_UNUSUAL_RATIO": 0.9}}})
    ops.launch("--workers", "1", "--spiders", "trending")
    # Six usual rounds: the unusual ones stay below the median of the last days for six rounds.
    wait_for(lambda: rounds_kept(ops) >= 6, 150, "six usual rounds kept")
    assert worker_file(ops)["unusual"] is None
    assert ops.run("watchdog").stdout == ""

    fake_github.control(generation=ROWS_GONE)
    record = wait_for(lambda: (r := worker_file(ops)).get("unusual") and r, 90,
                      "an unusual round")
    assert record["unusual"].startswith("trending?since=daily: 20 rows, median 25"), record
    start = rounds_kept(ops)
    wait_for(lambda: rounds_kept(ops) > start, 90, "one more unusual round")
    alert = ops.run("watchdog")
    assert alert.returncode == 0, alert.stderr
    assert alert.stdout.count("\n") == 1 and alert.stdout.startswith(
        "collector unusual: trending 0/1: trending?since=daily: 20 rows, median 25"), alert.stdout
    assert ops.run("watchdog").stdout == ""  # said once while it lasts
    # The median moves as unusual rounds join the last days: the figures, not the line, change.
    shown = [line for line in ops.run("status").stdout.splitlines() if "unusual" in line]
    assert len(shown) == 1 and shown[0].startswith(
        "    unusual round: trending?since=daily: 20 rows, median "), shown
    assert len(log_lines(ops, "unusual round against the last 7 days: trending")) == 1

    fake_github.control(generation=0)
    wait_for(lambda: (r := worker_file(ops)) and r.get("finished") and r["unusual"] is None,
             90, "a usual round again")
    back = ops.run("watchdog")
    assert (back.returncode, back.stdout) == (0, "collector usual again: trending 0/1\n")
    assert ops.run("watchdog").stdout == ""
    assert not [line for line in ops.run("status").stdout.splitlines() if "unusual" in line]
    assert len(log_lines(ops, "usual again against the last 7 days")) == 1
    assert len(log_lines(ops, "unusual round against")) == 1
