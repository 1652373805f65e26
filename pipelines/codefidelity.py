"""A docs page whose Markdown keeps less than its content shows (code blocks byte-exact, tab
panels under their labels, tables with every cell under its header, callouts under their
titles) is logged once, with its URL and each form below 100%.

After the content-hash dedup: a page is logged when its content is new, so an unchanged page
fetched again in later rounds is not logged again; a changed one is judged anew."""

from __future__ import annotations

import logging
from typing import Any

from scrapy.crawler import Crawler

from scraper.docpages.fidelityrecord import FORMS
from scraper.items import DocPageItem

logger = logging.getLogger(__name__)


def shortfalls(item: Any) -> list[str]:
    """Each form the item's Markdown keeps fewer of than its page shows, as "k of n <what>"."""
    below = []
    for shown, kept, noun, how in FORMS:
        total, held = item.get(shown) or 0, item.get(kept) or 0
        if held < total:
            below.append(f"{held} of its {total} {noun} {how}")
    return below


class CodeFidelityPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CodeFidelityPipeline:
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        if isinstance(item, DocPageItem):
            below = shortfalls(item)
            if below:
                self.stats.inc_value("docs/pages_below_full_fidelity")
                logger.warning("docs fidelity: %s holds %s in its Markdown", item["url"],
                               ", ".join(below))
        return item
