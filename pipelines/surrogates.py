"""Lone surrogates out of items, before anything hashes or writes them.

JSON may escape half a UTF-16 pair (``"\\ud800"``) and ``json.loads`` keeps it as a lone
surrogate, which no UTF-8 encoder accepts: the content hash and the item store would both fail
on it and the item would be lost. Each one is replaced by U+FFFD (what a UTF-8 decoder makes of
a broken sequence), the item is kept, and ``items/lone_surrogates_replaced`` counts the items.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import scrapy
from itemadapter import ItemAdapter
from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""In a Python str every surrogate is a lone one: json.loads joins the valid pairs."""


def replace_lone_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` with every lone surrogate in its strings (nested in lists and dicts too)
    replaced by U+FFFD, and how many were replaced."""
    if isinstance(value, str):
        if value.isascii():  # O(1) in CPython: most fields, and no regex pass over them
            return value, 0
        return _LONE_SURROGATE.subn("\ufffd", value)
    if isinstance(value, list):
        pairs = [replace_lone_surrogates(v) for v in value]
        return [v for v, _ in pairs], sum(n for _, n in pairs)
    if isinstance(value, dict):
        entries = [(replace_lone_surrogates(k), replace_lone_surrogates(v))
                   for k, v in value.items()]
        return {k: v for (k, _), (v, _) in entries}, sum(a + b for (_, a), (_, b) in entries)
    return value, 0


class LoneSurrogatePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LoneSurrogatePipeline:
        return cls(crawler)

    def process_item(self, item: scrapy.Item) -> scrapy.Item:
        adapter = ItemAdapter(item)
        replaced = 0
        for field, value in adapter.items():
            cleaned, n = replace_lone_surrogates(value)
            if n:
                adapter[field] = cleaned
                replaced += n
        if replaced:
            self.stats.inc_value("items/lone_surrogates_replaced")
            logger.warning("replaced %d lone surrogate(s) with U+FFFD in an item from %s",
                           replaced, adapter.get("url") or adapter.get("html_url")
                           or adapter.get("full_name") or "?")
        return item
