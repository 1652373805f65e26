"""The spider loader of the distributed mode (``SPIDER_LOADER_CLASS``, set by
:mod:`scraper.cluster.wiring`): Scrapy's, handing out each collector spider with its distributed
mixin in front, so ``scrapy crawl docs`` with a Redis URL runs the Redis variant."""

from __future__ import annotations

from scrapy import Spider
from scrapy.settings import BaseSettings
from scrapy.spiderloader import SpiderLoader

from scraper.cluster.searchspider import DistributedSearchSpider
from scraper.cluster.spider import DistributedDocsSpider, DistributedSpider

MIXINS: dict[str, type[DistributedSpider]] = {"docs": DistributedDocsSpider,
                                              "search": DistributedSearchSpider}
"""Spiders whose Redis mode needs more than :class:`DistributedSpider`."""


def distributed_class(spidercls: type[Spider]) -> type[Spider]:
    """``spidercls`` with the distributed mixin in front (same name, settings and methods)."""
    mixin = MIXINS.get(spidercls.name, DistributedSpider)
    return type(spidercls.__name__, (mixin, spidercls), {"__module__": spidercls.__module__})


class DistributedSpiderLoader(SpiderLoader):
    """Scrapy's spider loader; each spider it loads comes with its distributed mixin, one class
    per spider for the process's life."""

    def __init__(self, settings: BaseSettings) -> None:
        super().__init__(settings)
        self._distributed: dict[str, type[Spider]] = {}

    def load(self, spider_name: str) -> type[Spider]:
        if spider_name not in self._distributed:
            self._distributed[spider_name] = distributed_class(super().load(spider_name))
        return self._distributed[spider_name]
