"""What the collector asks of Scrapy's engine that Scrapy has no public answer for."""

from __future__ import annotations

from scrapy.crawler import Crawler


def engine_closing(crawler: Crawler) -> bool:
    """True once the crawl is closing or closed, however it closes: ``engine.stop`` (a
    SIGTERM), a ``CloseSpider``, or a ``close_spider_async`` call. Long waits (a budget pause, a
    Redis outage) check it so a closing spider is never held up."""
    engine = crawler.engine
    if engine is None or not engine.running:
        return True
    # Only the engine slot knows of a close that did not go through engine.stop.
    slot = getattr(engine, "_slot", None)
    return getattr(slot, "closing", None) is not None
