"""What Scrapy's feed exports (``-o out.csv``, ``FEEDS``) get from the collector's spiders: their
rows, one record shape per spider.

The trending spider also yields one page-snapshot record per fetched page (every row as then
observed, for the catalog's history: :class:`scraper.items.TrendingPageItem`). In a feed it
would set a CSV's header (no ``full_name``, ``stars``… columns for the rows) and mix two shapes
in a JSON file, so a feed leaves snapshots out unless its options name ``item_classes``
(``FEEDS = {"pages.jsonl": {"format": "jsonlines", "item_classes":
["scraper.items.TrendingPageItem"]}}``). The developer lists' rows are a shape of their own,
left out the same way. The item store under ``data/items/`` keeps them all.
"""

from __future__ import annotations

from typing import Any

from scrapy.extensions.feedexport import ItemFilter
from scrapy.settings import BaseSettings

from scraper.items import TrendingDeveloperItem, TrendingDeveloperPageItem, TrendingPageItem

SNAPSHOTS = (TrendingPageItem, TrendingDeveloperPageItem, TrendingDeveloperItem)
"""Left out of a feed that names no ``item_classes``: the page snapshots, and the developer
rows (a second record shape: a feed of them names ``scraper.items.TrendingDeveloperItem``)."""
FILTER_PATH = f"{__name__}.RowsOnly"


class RowsOnly(ItemFilter):
    def accepts(self, item: Any) -> bool:
        if self.item_classes:
            return super().accepts(item)
        return not isinstance(item, SNAPSHOTS)


def rows_only_feeds(settings: BaseSettings) -> dict[str, dict[str, Any]] | None:
    """FEEDS with :class:`RowsOnly` for every feed that chose no filter of its own; None when
    there are no feeds."""
    feeds = settings.getdict("FEEDS")
    if not feeds:
        return None
    return {uri: {"item_filter": FILTER_PATH, **options} for uri, options in feeds.items()}
