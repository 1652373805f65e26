"""Quiet logs: a runner's worker round logs its summary line, warnings and errors, not
Scrapy's stats dump, its per-minute progress line or its start-up inventory: at most 1,500
bytes a round on average."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.collector import Collector, wait_for
from tests.support.ops import Ops

BYTES_PER_ROUND = 1500
ROUNDS = 4


@pytest.mark.timeout(300)
def test_each_workers_log_grows_under_1500_bytes_a_round(
        tmp_path: Any, fake_github: Any, fake_docs: Any) -> None:
    ops = Ops(Collector(tmp_path / "c"))
    try:
        ops.collector.configure(github=fake_github, docs_urls=[f"{fake_docs.url()}/site0/"],
                                stop_timeout=3, spiders={
                                    "trending": {"languages": ["", "python"],
                                                 "periods": ["daily"]},
                                    "search": {"queries": ["few"], "per_page": 50},
                                    "docs": {"max_pages_per_site": 5}})
        ops.launch("--workers", "3")
        wait_for(lambda: ops.layout.status_file.exists() and all(
            w["rounds"] >= ROUNDS for w in ops.status()["workers"]), 200, f"{ROUNDS} rounds each")
        assert ops.run("stop").returncode == 0
        rounds = {w["slug"]: w["rounds"] for w in ops.status()["workers"]}
    finally:
        ops.cleanup()
    assert set(rounds) == {"trending-0of1", "search-0of1", "docs-0of1"}, rounds
    for slug, count in rounds.items():
        log = (ops.collector.data_dir / "logs" / f"{slug}.log").read_text()
        per_round = len(log.encode()) / count
        assert per_round <= BYTES_PER_ROUND, f"{slug}: {per_round:.0f} bytes a round:\n{log}"
        assert log.count(f"{slug.split('-')[0]} 0/1: ") >= count, log  # each summary line
        assert "Dumping Scrapy stats" not in log and "] INFO: Crawled " not in log
    # A crawl by hand keeps what Scrapy users expect: the stats dump and the progress line.
    by_hand = ops.collector.crawl("search", "0/1")
    assert by_hand.returncode == 0, by_hand.stderr
    log = (ops.collector.data_dir / "logs" / "search-0of1.log").read_text()
    assert "Dumping Scrapy stats" in log and "] INFO: Crawled 0 pages" in log
