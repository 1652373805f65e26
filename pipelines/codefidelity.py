"""A docs page whose Markdown does not hold all its code byte-exact is logged once, with its URL.

After the content-hash dedup: a page is logged when its content is new, so an unchanged page
fetched again in later rounds is not logged again; a changed one is judged anew."""

from __future__ import annotations

import logging
from typing import Any

from scrapy.crawler import Crawler

from scraper.items import DocPageItem

logger = logging.getLogger(__name__)


class CodeFidelityPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CodeFidelityPipeline:
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        if isinstance(item, DocPageItem):
            blocks, exact = item.get("code_blocks") or 0, item.get("code_blocks_exact") or 0
            if exact < blocks:
                self.stats.inc_value("docs/pages_below_full_fidelity")
                logger.warning("code fidelity: %s holds %d of its %d code blocks byte-exact in "
                               "its Markdown", item["url"], exact, blocks)
        return item
