"""Values nested past ``ITEM_MAX_DEPTH`` out of items, before anything walks them.

JSON from a server may nest a value hundreds of levels deep and ``json.loads`` still takes it:
a search result's description nested 900 lists deep got past the spider, and then the
lone-surrogate pass, the content hash and the item store, each walking values by recursion,
raised ``RecursionError`` (two tracebacks) and the item was lost without a line. No field the
spiders write nests more than a few levels (a trending snapshot's rows: two), so a field nested
deeper is written as null, one WARNING names the item and the field, and
``items/too_deep_nulled`` counts the items; the rest of the item is kept.
"""

from __future__ import annotations

import logging
from typing import Any

import scrapy
from itemadapter import ItemAdapter
from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists or dicts more than ``limit`` levels deep (a scalar is
    level 0), looked at without recursion and without walking past the limit."""
    stack = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children: Any = current.values()
        elif isinstance(current, (list, tuple)):
            children = current
        else:
            continue
        if depth == limit:
            if children:
                return True
            continue
        stack.extend((child, depth + 1) for child in children)
    return False


class NestingLimitPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self.limit = crawler.settings.getint("ITEM_MAX_DEPTH")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NestingLimitPipeline:
        return cls(crawler)

    def process_item(self, item: scrapy.Item) -> scrapy.Item:
        adapter = ItemAdapter(item)
        nulled = [name for name, value in adapter.items() if deeper_than(value, self.limit)]
        for name in nulled:
            adapter[name] = None
            logger.warning("%s: field %s nests deeper than ITEM_MAX_DEPTH (%d): written as "
                           "null", adapter.get("full_name") or adapter.get("url")
                           or adapter.get("html_url") or type(item).__name__, name, self.limit)
        if nulled:
            assert self.stats is not None
            self.stats.inc_value("items/too_deep_nulled")
        return item
