"""Python's youngest-generation GC threshold for the crawl (``GC_GEN0_THRESHOLD``).

A docs page allocates and frees a few thousand container objects (its lxml proxies, Markdown
frames, Scrapy's Deferreds and tasks), which reference counting frees; with CPython's default
threshold of 700 those short bursts alone started ~1,300 young collections in a 6,000-page crawl,
3% of its CPU. At 7,000 a burst that is freed again no longer triggers one, and a garbage cycle
(a Twisted Failure, a traceback) still goes within 7,000 net allocations
(benchmarks/README.md, "Where the time goes").
"""

from __future__ import annotations

import gc

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured


class GcThreshold:
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GcThreshold:
        threshold = crawler.settings.getint("GC_GEN0_THRESHOLD")
        if threshold <= 0:
            raise NotConfigured
        gc.set_threshold(threshold, *gc.get_threshold()[1:])
        return cls()
