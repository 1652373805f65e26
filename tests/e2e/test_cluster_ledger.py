"""The gap ledger of a cluster: every box's events in Redis, merged where ``gaps`` runs.

Two runners (separate data dirs) on one real Redis and the fake docs host. A box is killed
mid-round while it holds the live sites' start requests (the host is stopped: they hang), and a
fourth site refuses connections: ``gaps`` on the dataset box names exactly those — each live
site silent, with the killed box's id, and the dead site failed (refused). The dataset box then
takes the round over: the live sites' data comes, and only the dead site is left.
"""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import (
    PAGES,
    SITES,
    finish,
    free_port,
    machines,
    runner_in_process,
    send_all,
    start_runners,
    tree,
)
from tests.support.collector import Collector, wait_for

pytestmark = pytest.mark.timeout(150)

LEASE = 2.0


def events(client: Any) -> list[dict[str, Any]]:
    return [json.loads(fields[b"e"]) for _, fields in client.xrange("hubcollect:ledger")]


def gaps(box: Collector, capsys: pytest.CaptureFixture[str]) -> set[tuple[str, str, str]]:
    code, out = runner_in_process(box, capsys, "gaps", "--json")
    assert code == 0, out
    return {(row["key"], row["outcome"], row["cause"]) for row in json.loads(out)}


def test_gaps_name_the_killed_box_and_the_dead_site_and_nothing_else(
        tmp_path: Path, redis_server: Any, redis_url: str, fake_docs_factory: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    docs = fake_docs_factory(sites=SITES, pages=PAGES)
    dead = f"http://127.0.0.1:{free_port()}/"
    victim, dataset = machines(tmp_path, 2)
    for box in (victim, dataset):
        box.configure(docs_urls=[*(f"{docs.url()}/site{k}/" for k in range(SITES)), dead],
                      redis_url=redis_url,
                      spiders={"docs": {"max_pages_per_site": 500,
                                        "settings": {"DISTRIBUTED_LEASE": LEASE}}})
    code, out = runner_in_process(dataset, capsys, "catalog")  # by hand: the dataset box
    assert code == 0, out
    client = redis_server.client()

    docs.process.send_signal(signal.SIGSTOP)  # the live sites' requests wait in its socket
    try:
        proc = start_runners([victim], redis_url, "docs", workers=1)[0]

        def dead_failed_and_sites_sent() -> bool:
            seen = events(client)
            sent = {e["key"] for e in seen if e["t"] == "sent"}
            return len(sent) == SITES + 1 and any(
                e["t"] == "fetch" and e["key"] == dead and e["outcome"] == "failed"
                for e in seen)

        wait_for(dead_failed_and_sites_sent, 90, "the dead site failed, every site sent")
        send_all(tree(proc), signal.SIGKILL)
        proc.wait()
        killed = (victim.data_dir / "state" / "box-id").read_text().strip()
        plan = [e for e in events(client) if e["t"] == "plan"]
        assert len(plan) == 1 and len(plan[0]["keys"]) == SITES + 1, plan
        live = set(plan[0]["keys"]) - {dead}

        # Its busy marker lapses after DISTRIBUTED_LEASE: its leased sites are silent then.
        expected = {(site, "silent", f"lease lapsed ({killed})") for site in live}
        expected.add((dead, "failed", "refused"))
        wait_for(lambda: gaps(dataset, capsys) == expected, 30,
                 "gaps naming the killed box's sites and the dead site")
    finally:
        docs.process.send_signal(signal.SIGCONT)
    code, out = runner_in_process(dataset, capsys, "gaps")
    assert out.count(f"silent (lease lapsed ({killed}))") == SITES, out
    assert f"{dead}: failed (refused)" in out, out

    # The dataset box joins the round, takes the lapsed leases over and ends it.
    results = finish(start_runners([dataset], redis_url, "docs", workers=1))
    assert [rc for rc, _ in results] == [0], results
    assert gaps(dataset, capsys) == {(dead, "failed", "refused")}
    code, out = runner_in_process(dataset, capsys, "catalog")
    assert code == 0, out
    with sqlite3.connect(dataset.data_dir / "catalog.sqlite") as conn:
        rows = dict(conn.execute("SELECT key, outcome FROM fetch_ledger WHERE shard = 'cluster'"))
    assert rows == {**dict.fromkeys(live, "data"), dead: "failed"}, rows
