"""The watchdog's unusual-round lines: once when a shard's rounds turn unusual, once when they
are usual again, and none for a shard whose health line already speaks."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.core.health import ShardHealth
from runner.core.runnerstate import SlotRecord, StatusFile, read_health_memory
from runner.ops.watchdog import _judge_unusual
from scraper.config.collector import CollectorConfig
from scraper.utils.layout import DataLayout
from scraper.utils.statefile import WorkerRecord, write_worker

REASON = "trending?since=daily: 12 rows, median 25"


def judge(layout: DataLayout, unusual: dict[str, str | None],
          verdicts: dict[str, str] | None = None) -> None:
    """One watchdog run over trending shards 0/2 and 1/2 whose files say ``unusual``."""
    slots = []
    for index in range(2):
        shard, slug = f"{index}/2", f"trending-{index}of2"
        slots.append(SlotRecord(spider="trending", shard=shard, slug=slug))
        write_worker(layout.worker_state_of(slug), WorkerRecord(
            spider="trending", shard=shard, unusual=unusual.get(slug)))
    health = [ShardHealth("trending", slot.shard, (verdicts or {}).get(slot.slug, "ok"))
              for slot in slots]
    _judge_unusual(StatusFile(workers=slots), layout, CollectorConfig(data_dir=layout.root),
                   health)


def test_said_once_when_it_begins_and_once_when_it_ends(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layout = DataLayout(tmp_path)
    judge(layout, {})
    judge(layout, {"trending-1of2": REASON})
    assert capsys.readouterr().out == f"collector unusual: trending 1/2: {REASON}\n"
    judge(layout, {"trending-1of2": REASON.replace("12", "11")})  # the figures move: no line
    assert capsys.readouterr().out == ""
    assert read_health_memory(layout.health_memory).unusual == ["trending-1of2"]
    judge(layout, {})
    judge(layout, {})
    assert capsys.readouterr().out == "collector usual again: trending 1/2\n"
    assert "collector unusual: trending 1/2" in (layout.logs_dir / "runner.log").read_text()


def test_a_shard_health_reports_gets_health_line_only(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layout = DataLayout(tmp_path)
    judge(layout, {"trending-0of2": REASON, "trending-1of2": REASON},
          {"trending-0of2": "drift"})
    assert capsys.readouterr().out == f"collector unusual: trending 1/2: {REASON}\n"
    judge(layout, {"trending-0of2": REASON}, {"trending-0of2": "drift"})
    assert capsys.readouterr().out == "collector usual again: trending 1/2\n"
