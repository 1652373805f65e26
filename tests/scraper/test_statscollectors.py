"""The crawl's stats collector (issue 37): Scrapy's in-memory one without the per-call shim."""

from __future__ import annotations

from scrapy.utils.test import get_crawler

from scraper import settings
from scraper.statscollectors import StatsCollector


def test_the_crawl_keeps_its_stats_with_plain_methods() -> None:
    assert settings.STATS_CLASS == "scraper.statscollectors.StatsCollector"
    crawler = get_crawler(settings_dict={"STATS_CLASS": settings.STATS_CLASS})
    stats = crawler.stats
    assert isinstance(stats, StatsCollector)
    # Scrapy's shim hands out a wrapper per method; here it is the method itself.
    assert stats.inc_value.__func__ is StatsCollector.inc_value  # type: ignore[attr-defined]
    stats.open_spider()
    stats.inc_value("docs/tables")
    stats.inc_value("docs/tables", 2)
    stats.max_value("request_depth_max", 3)
    stats.max_value("request_depth_max", 1)
    stats.min_value("least", 2)
    stats.min_value("least", 5)
    stats.set_value("finish_reason", "finished")
    assert stats.get_value("docs/tables") == 3
    assert stats.get_stats() == {"docs/tables": 3, "request_depth_max": 3, "least": 2,
                                 "finish_reason": "finished"}
