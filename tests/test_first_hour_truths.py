"""What a new user meets in the first hour, told truly: ``--once`` with its Redis away, the
``status`` totals and budget rows."""

from __future__ import annotations

import time

import pytest

from tests.support import Collector, free_port


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
