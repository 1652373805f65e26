"""Rounds of the real item store, in-process, as a worker's crawl runs them: segments written
(and closed on their boundaries) without a crawl, for the segment and catalog tests."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import scrapy
from scrapy.utils.test import get_crawler

from pipelines.itemstore import JsonLinesItemStore
from scraper import settings as project
from scraper.utils.sharding import Shard

HOUR = 1_800_000_000.0
"""2027-01-15T08:00:00Z, on an hour boundary."""


def fake_clock(monkeypatch: pytest.MonkeyPatch, start: float = HOUR) -> list[float]:
    """``time.time`` reads ``clock[0]`` of the list returned: a test moves it on by hand."""
    clock = [start]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    return clock


class Recorder(scrapy.Spider):
    name = "search"
    shard = Shard(0, 1)


def store_round(data_dir: Path, items: list[dict], shard: Shard | None = None,
                **settings: object) -> JsonLinesItemStore:
    """One round of ``search`` shard ``shard`` (else 0/1) writing ``items``."""
    defaults = {k: getattr(project, k) for k in dir(project) if k.startswith("ITEMSTORE_")}
    spider = type("Recorder", (Recorder,), {"shard": shard or Recorder.shard})
    crawler = get_crawler(spider, {**defaults, "COLLECTOR_DATA_DIR": str(data_dir), **settings})
    crawler.spider = crawler._create_spider()
    crawler.stats.open_spider()
    store = JsonLinesItemStore.from_crawler(crawler)
    store.open_spider()
    for item in items:
        store.process_item(item)
    store.close_spider()
    return store


def search_item(n: int) -> dict:
    return {"spider": "search", "id": n, "full_name": f"o/r{n}", "stargazers_count": n,
            "collected_at": "2026-12-01T10:00:00Z"}
