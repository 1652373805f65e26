"""Small edges of the first hour: ``catalog`` takes ``--redis-url`` as ``run`` and ``status``
do; ``-o`` on a repeat crawl says that it got the new items only, and how to get every one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scraper.extensions.summary import FEED_NOTE
from tests.support.collector import Collector, free_port


def test_catalog_takes_redis_url_as_run_and_status_do(collector: Collector) -> None:
    collector.configure(docs_urls=["http://127.0.0.1:9/"])  # no redis_url in the file
    url = f"redis://127.0.0.1:{free_port()}/0"
    built = collector.runner("catalog", "--redis-url", url)
    assert built.returncode == 0, built.stderr
    # The cluster's dataset is that Redis's (away here, and said so), not this box's alone.
    assert f"Redis {url} is unreachable" in built.stdout, built.stdout
    bad = collector.runner("catalog", "--redis-url", "localhost:6379")
    assert (bad.returncode, bad.stderr) == (
        2, "python -m runner: argument --redis-url: 'localhost:6379' is not a Redis URL such as "
           "redis://127.0.0.1:6379/0\n")


def test_a_repeat_crawl_with_o_says_its_feed_has_the_new_items_only(
        collector: Collector, fake_github: Any, tmp_path: Path) -> None:
    collector.configure(github=fake_github,
                        spiders={"trending": {"languages": [""], "periods": ["daily"]}})
    first, again, every = (tmp_path / name for name in ("first.json", "again.json",
                                                        "every.json"))
    crawl = collector.crawl("trending", None, "-O", str(first))
    assert crawl.returncode == 0, crawl.stderr[-2000:]
    assert len(json.loads(first.read_text())) == 25
    assert FEED_NOTE not in crawl.stderr  # nothing was left out
    crawl = collector.crawl("trending", None, "-O", str(again))
    assert crawl.returncode == 0, crawl.stderr[-2000:]
    assert json.loads(again.read_text()) == []
    assert crawl.stderr.strip().splitlines()[-1].endswith(f"; {FEED_NOTE}"), crawl.stderr
    # What the line offers, as it says it.
    offered = FEED_NOTE.split("add ", 1)[1].split()
    crawl = collector.crawl("trending", None, "-O", str(every), *offered)
    assert crawl.returncode == 0, crawl.stderr[-2000:]
    assert len(json.loads(every.read_text())) == 25
    # A round of the runner has no feed: its summary lines never carry the note.
    once = collector.runner("--once", "--workers", "1", "--spiders", "trending")
    assert once.returncode == 0 and FEED_NOTE not in collector.log("trending") + once.stderr
