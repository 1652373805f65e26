"""The states ``status`` shows: a slot's own, ``redis-wait`` and ``down``, and which count up."""

from __future__ import annotations

import json

from runner.core.health import ShardHealth
from runner.core.runnerstate import UP, ShownState, SlotRecord, SlotStatus
from runner.status.render import worker_row
from scraper.utils.statefile import WorkerRecord

HEALTHY = ShardHealth(spider="docs", shard="0/1", verdict="ok")


def shown(state: str, runner_alive: bool, live: WorkerRecord | None = None) -> str:
    slot = SlotRecord(spider="docs", shard="0/1", slug="docs-0of1", state=state, pid=7,
                      round_pid=7)
    row = worker_row(slot, live, runner_alive, 0.0, HEALTHY)
    return json.loads(json.dumps(row))["state"]  # as status --json writes it


def test_a_kept_going_slot_is_down_without_its_runner_and_an_ended_one_is_not() -> None:
    for state in ("running", "sleeping", "queued", "restarting"):
        assert shown(state, runner_alive=True) == state
        assert shown(state, runner_alive=False) == "down"
    for state in ("done", "failed", "stopped", "disk_full"):
        assert shown(state, runner_alive=False) == state


def test_a_running_worker_without_its_redis_is_shown_waiting_and_counts_up() -> None:
    live = WorkerRecord(pid=7, stats={"distributed/redis_up": 0})
    assert shown("running", runner_alive=True, live=live) == "redis-wait"
    assert shown("sleeping", runner_alive=True, live=live) == "sleeping"
    assert ShownState.REDIS_WAIT in UP and ShownState.DOWN not in UP
    assert SlotStatus.RESTARTING not in UP and SlotStatus.RUNNING in UP
