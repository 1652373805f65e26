"""One line on stderr at the end of every ``scrapy crawl``: what the round did.

::

    docs 0/4: 12 pages, 3 new items, 169 skipped as collected, 2 duplicates dropped (data/it…)

A round that failed says why, with the cause health uses (``; fetched nothing in 2 requests
(127.0.0.1:9: Connection was refused …)``), and ``scrapy crawl`` then exits with
NOTHING_FETCHED_EXIT. A Scrapy user who runs a shard that has collected before sees at once
why nothing is new (and that ``-a deltafetch_reset=1`` exists); the runner's workers send
stderr to their log, so the line is there too.
"""

from __future__ import annotations

import logging
import os
import pprint
import sys
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler

from scraper.slicing.searchround import incomplete_note
from scraper.utils.outcome import stats_problem
from scraper.utils.sharding import ShardedSpider
from scraper.utils.units import counted

logger = logging.getLogger(__name__)


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
        stats = self.crawler.stats
        if stats is not None and not self.crawler.settings.getbool("STATS_DUMP"):
            logger.debug("Scrapy stats:\n%s", pprint.pformat(stats.get_stats()))


def summary_line(crawler: Crawler, reason: str) -> str:
    spider = crawler.spider
    stats = crawler.stats
    assert spider is not None and stats is not None, "a summary is of a crawl that ran"
    count = stats.get_value

    def n(key: str) -> Any:
        return count(key, 0)

    label = f"{spider.name} {spider.shard}" if isinstance(spider, ShardedSpider) else spider.name
    written = count("itemstore/file")
    where = _short(written) if written else "nothing new written"
    ended = "" if reason == "finished" else f", ended: {reason}"
    problem = stats_problem(stats.get_stats())
    incomplete = incomplete_note(stats.get_stats())
    pages = n("response_received_count") - n("robotstxt/response_count")
    left_out = n("deltafetch/skipped") + n("contenthash/dropped")
    feeds = left_out and crawler.settings.getdict("FEEDS")
    return (f"{label}: {counted(pages, 'page')}, {counted(n('item_scraped_count'), 'new item')}, "
            f"{n('deltafetch/skipped')} skipped as collected, "
            f"{counted(n('contenthash/dropped'), 'duplicate')} dropped{ended} ({where})"
            + (f"; {problem}" if problem else "") + (f"; {incomplete}" if incomplete else "")
            + (f"; {FEED_NOTE}" if feeds else ""))


FEED_NOTE = ("-o/-O got the new items only; every item seen: add -a deltafetch_reset=1 "
             "-a contenthash_reset=1 -s ITEMSTORE_ENABLED=0")
"""Said when a crawl with feeds left collected content out of them: a repeat crawl's ``-o``
file is otherwise empty without a word."""


def _short(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
