"""What a new user meets in the first hour, told truly: ``--once`` with its Redis away, the
``status`` totals and budget rows."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import pytest

from runner.core.runnerstate import RunnerRecord, SlotRecord, StatusFile, write_status
from scraper.budget.limits import identity_for_token, identity_label
from scraper.budget.store import BucketKey, BucketSpec, BudgetStore
from scraper.utils.layout import DataLayout
from scraper.utils.statefile import WorkerRecord, write_json_atomic
from tests.support.budget import TIMING, Clock, rate, send
from tests.support.collector import Collector, free_port


@pytest.mark.timeout(60)
def test_once_with_an_unreachable_redis_fails_at_once_with_the_cause(
        collector: Collector) -> None:
    port = free_port()  # nothing listens there
    collector.configure(docs_urls=["http://127.0.0.1:9/"],
                        redis_url=f"redis://127.0.0.1:{port}/0")
    started = time.monotonic()
    result = collector.runner("--once", "--workers", "1", "--spiders", "docs", timeout=45)
    took = time.monotonic() - started
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert lines == [f"python -m runner: Redis redis://127.0.0.1:{port}/0 is not reachable "
                     f"({lines[0].split('(', 1)[1].split(')')[0]}): --once runs no round "
                     "without it"], result.stderr
    assert "Connection refused" in lines[0]
    assert took < 30, took
    assert not (collector.data_dir / "state" / "workers").exists()  # no worker started


def test_status_counts_every_shard_and_shows_the_runners_budget(
        collector: Collector, tmp_path: Path) -> None:
    collector.configure(docs_urls=["http://127.0.0.1:9/"])
    layout = DataLayout(collector.data_dir)
    layout.workers_state_dir.mkdir(parents=True)
    runner_token, shell_token = "ghp_the_runners_token", "ghp_this_shells_token"
    runner_id, shell_id = identity_for_token(runner_token), identity_for_token(shell_token)
    write_status(layout.status_file, StatusFile(
        RunnerRecord(pid=None, plan="plan: docs 1 — 1 worker", planned=1,
                     github_identity=identity_label(runner_id)),
        [SlotRecord(spider="docs", shard="0/1", slug="docs-0of1", state="sleeping")]))
    for slug, shard, items in (("docs-0of1", "0/1", 10), ("docs-0of4", "0/4", 5),
                               ("docs-1of4", "1/4", 7)):  # two shards of an earlier --workers 4
        write_json_atomic(layout.workers_state_dir / f"{slug}.json",
                          asdict(WorkerRecord(spider="docs", shard=shard, items_total=items)))
    clock = Clock(time.time())
    store = BudgetStore(layout.budget_db, TIMING, clock=clock, alive=lambda pid: True)
    for identity in (runner_id, shell_id):  # each identity has spent some of its budget
        key = BucketKey(identity, "search")
        store.define(key, BucketSpec(30, 60.0))
        ticket, _ = send(store, clock, key)
        store.complete(ticket, key, rate(12, clock.now + 40, limit=30))
    store.close()
    result = collector.runner("status", env=collector.env(GITHUB_TOKEN=shell_token))
    lines = result.stdout.splitlines()
    assert result.returncode == 3, result.stderr
    assert any(line.startswith("total: 22 items,") for line in lines), result.stdout
    assert "  of them 12 from shards this plan does not run: docs-0of4, docs-1of4" in lines
    budget = [line for line in lines if line.startswith("search ")]
    assert [line.split()[1:3] for line in budget] == [["token", f"…{runner_id[-4:]}"]], \
        result.stdout

    # Its Redis away: the budget lives there, and status says it cannot know it.
    port = free_port()
    collector.update_config({"redis_url": f"redis://127.0.0.1:{port}/0"})
    result = collector.runner("status")
    assert (f"github budget: unknown: Redis redis://127.0.0.1:{port}/0 is not reachable"
            in result.stdout.splitlines()), result.stdout
    assert "not used yet" not in result.stdout
