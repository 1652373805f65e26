"""One line on stderr at the end of every ``scrapy crawl``: what the round did.

::

    docs 0/4: 12 pages, 3 new items, 169 skipped as collected, 2 duplicates dropped (data/it…)

A Scrapy user who runs a shard that has collected before sees at once why nothing is new (and
that ``-a deltafetch_reset=1`` exists); the runner's workers send stderr to their log, so the
line is there too.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler


class RoundSummary:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RoundSummary:
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_closed(self, reason: str) -> None:
        print(summary_line(self.crawler, reason), file=sys.stderr, flush=True)


def summary_line(crawler: Crawler, reason: str) -> str:
    spider = crawler.spider
    stats = crawler.stats
    count = stats.get_value  # type: ignore[union-attr]

    def n(key: str) -> Any:
        return count(key, 0)

    label = f"{spider.name} {spider.shard}" if hasattr(spider, "shard") else spider.name
    written = count("itemstore/file")
    where = _short(written) if written else "nothing new written"
    ended = "" if reason == "finished" else f", ended: {reason}"
    pages = n("response_received_count") - n("robotstxt/response_count")
    return (f"{label}: {pages} pages, {n('item_scraped_count')} new "
            f"items, {n('deltafetch/skipped')} skipped as collected, "
            f"{n('contenthash/dropped')} duplicates dropped{ended} ({where})")


def _short(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
