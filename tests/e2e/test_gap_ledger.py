"""The gap ledger over a run with injected faults names each fault and nothing else.

Against the fake GitHub and a fake docs host: a ``scrapy crawl trending`` SIGKILLed while its
pages are held (its lists: silent), then ``python -m runner --once`` with a 500 burst on one
trending list, the search API's rate limit exhausted (the round closes with its query waiting
for the budget: skipped) and a docs site nobody listens on (refused). ``gaps`` lists exactly
these; ``status`` prints the share that yielded data, ``metrics`` the ledger's counts, and the
catalog and ``export`` keep the ledger as a table.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from runner.catalog.viewer import metadata
from scraper.utils.ledger import ledger_root
from tests.support.collector import Collector, free_port, generous_budget, wait_for

QUERY = "few"
PYTHON = "daily|python|"
ALL = "daily||"


def plan_written(data_dir: Path) -> bool:
    return any(b'"t":"plan"' in path.read_bytes()
               for path in ledger_root(data_dir / "state").rglob("trending-*.jsonl"))


@pytest.mark.timeout(240)
def test_the_ledger_names_each_fault_and_nothing_else(collector: Collector, fake_github: Any,
                                                      fake_docs: Any) -> None:
    live_site = f"{fake_docs.url()}/site0/"
    dead_site = f"http://127.0.0.1:{free_port()}/docs/"
    collector.configure(github=fake_github, docs_urls=[live_site, dead_site], spiders={
        "trending": {"languages": ["", "python"], "periods": ["daily"]},
        "search": {"queries": [QUERY], "complete": False,
                   # The round ends while its query waits for the exhausted budget.
                   "settings": {"CLOSESPIDER_TIMEOUT": 4}},
        "docs": {"settings": {"DOCS_MAX_PAGES_PER_SITE": 3}},
    })
    generous_budget(collector)

    # A worker killed mid-round: its plan is written, no outcome.
    fake_github.control("web", hold=True)
    killed = collector.start_crawl("trending")
    try:
        wait_for(lambda: plan_written(collector.data_dir), 60, "the trending round's plan")
    finally:
        os.kill(killed.pid, signal.SIGKILL)
        killed.communicate(timeout=30)
        fake_github.control("web", hold=False)

    fake_github.control("web", fail={"match": "/trending/python", "status": 500})
    fake_github.control("api", exhaust={"resource": "search", "reset_in": 600})
    run = collector.runner("--workers", "3", "--once", timeout=150)
    assert run.returncode in (0, 1), run.stderr[-2000:]

    listed = collector.runner("gaps", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {(row["spider"], row["key"], row["outcome"], row["cause"]): row["rounds"]
            for row in json.loads(listed.stdout)}
    assert rows == {
        ("trending", ALL, "silent", ""): 1,
        ("trending", PYTHON, "silent", ""): 1,
        ("trending", PYTHON, "failed", "HTTP 500"): 1,
        ("search", QUERY, "skipped", "budget"): 1,
        ("docs", dead_site, "failed", "refused"): 1,
    }, listed.stdout
    text = collector.runner("gaps").stdout
    assert f"docs site {dead_site}: failed (refused), 1 round" in text, text
    assert live_site not in text

    status = collector.runner("status").stdout
    assert "fetches that yielded data, last 24 h" in status, status
    assert "  docs 50% (1/2; 1 failed)" in status, status
    assert "  trending 25% (1/4; 1 failed, 2 silent)" in status, status
    metrics = collector.runner("metrics").stdout
    assert 'hubcollect_scheduled_fetches{spider="search",outcome="skipped"} 1' in metrics
    assert 'hubcollect_scheduled_fetches{spider="docs",outcome="data"} 1' in metrics
    assert 'hubcollect_gap_ratio{spider="docs"} 0.5' in metrics
    assert 'hubcollect_gap_ratio{spider="trending"} 0.75' in metrics

    assert collector.runner("catalog").returncode == 0
    canned = metadata()["databases"]["catalog"]["queries"]["gaps"]["sql"]
    with closing(sqlite3.connect(collector.data_dir / "catalog.sqlite")) as conn:
        assert {(r[0], r[2], r[3], r[4]) for r in conn.execute(canned, {"days": 7})} == set(rows)
    out = collector.home / "export"
    exported = collector.runner("export", "--format", "jsonl", "--out", str(out),
                                "--table", "fetch_ledger")
    assert exported.returncode == 0, exported.stderr
    ledger = [json.loads(line) for line in (out / "fetch_ledger.jsonl").read_text().splitlines()]
    assert sorted((r["spider"], r["key"], r["outcome"]) for r in ledger) == sorted([
        ("trending", ALL, "silent"), ("trending", PYTHON, "silent"),
        ("trending", ALL, "data"), ("trending", PYTHON, "failed"),
        ("search", QUERY, "skipped"), ("docs", live_site, "data"),
        ("docs", dead_site, "failed")])
