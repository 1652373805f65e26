"""Exceptions shared between the collector's components."""

from scrapy.exceptions import DropItem


class DuplicateItem(DropItem):
    """Dropped because the same content was already collected (and written) before.

    Unlike other drops, the page's work is done: URL-level dedup may record it as collected.
    """
