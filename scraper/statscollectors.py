"""The crawl's stats collector: Scrapy's in-memory one, read and written without its deprecation
shim."""

from __future__ import annotations

from scrapy.statscollectors import MemoryStatsCollector


class StatsCollector(MemoryStatsCollector):
    """``MemoryStatsCollector`` with plain attribute lookup.

    Scrapy 2.19's ``StatsCollector.__getattribute__`` wraps every stats method to warn about a
    ``spider=`` argument, and looks each attribute up under a ``_cached_`` name first: every
    ``inc_value`` costs a failed lookup (an AttributeError raised and caught, for ``_stats``)
    and a wrapper call, 1.7 µs where the method itself takes 0.1. A docs page makes 50–70 stats
    calls (Scrapy's middlewares, the scheduler, the fidelity counts). Nothing here passes
    ``spider=``; a caller that does is served as before, without the warning."""

    __getattribute__ = object.__getattribute__
