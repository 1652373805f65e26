"""Which distributed mixin a collector spider gets: ``scrapy crawl`` wraps the spider class in
it when a Redis URL is configured (:mod:`scraper.commands.crawl`)."""

from __future__ import annotations

from scrapy import Spider

from scraper.distributed.search import DistributedSearchSpider
from scraper.distributed.spider import DistributedDocsSpider, DistributedSpider

MIXINS: dict[str, type[DistributedSpider]] = {"docs": DistributedDocsSpider,
                                              "search": DistributedSearchSpider}
"""Spiders whose Redis mode needs more than :class:`DistributedSpider`."""


def distributed_class(spidercls: type[Spider]) -> type[Spider]:
    """``spidercls`` with the distributed mixin in front (same name, settings and methods)."""
    mixin = MIXINS.get(spidercls.name, DistributedSpider)
    return type(spidercls.__name__, (mixin, spidercls), {"__module__": spidercls.__module__})
