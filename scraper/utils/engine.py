"""What the collector asks of Scrapy's engine that Scrapy has no public answer for."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from scrapy.crawler import Crawler

if TYPE_CHECKING:
    from twisted.internet.base import DelayedCall, ReactorBase


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


def call_later(delay: float, function: Callable[..., object], *args: object) -> DelayedCall:
    """``reactor.callLater``, typed: the installed reactor is imported when called, after
    Scrapy has installed the one its settings name."""
    from twisted.internet import reactor

    # The module attribute is typed as the zope interface, whose methods read without ``self``.
    return cast("ReactorBase", reactor).callLater(delay, function, *args)
