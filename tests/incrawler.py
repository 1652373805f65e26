"""Crawlers for in-process component tests: Scrapy's ``get_crawler`` with the project's
settings (``scraper/settings.py``) and a spider, no reactor and no process."""

from __future__ import annotations

from typing import Any

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.utils.test import get_crawler

from scraper import settings as project_settings
from scraper.addon import config_settings
from scraper.config import parse_config
from scraper.sharding import UNSHARDED

MEMORY = {
    "DELTAFETCH_STORAGE": "scraper.stores.memory.MemoryDeltaFetchStorage",
    "CONTENTHASH_STORAGE": "scraper.stores.memory.MemoryContentHashStorage",
    "BUDGET_STORAGE": "scraper.stores.memory.MemoryBudgetStorage",
    "ETAG_STORAGE": "scraper.stores.memory.MemoryEtagStorage",
    "SLICEPLAN_STORAGE": "scraper.stores.memory.MemorySlicePlanStorage",
    "TRENDING_ARCHIVE_STORAGE": "scraper.stores.memory.MemoryPageArchive",
}
"""Every ``*_STORAGE`` setting pointing at the in-memory stores."""


class PlainSpider(Spider):
    """What the components read of a collector spider: a name and a shard."""

    name = "t"
    shard = UNSHARDED


def project_crawler(spidercls: type[Spider] = PlainSpider, **settings: Any) -> Crawler:
    """A crawler with the project's settings, ``settings`` over them, its spider and its engine
    made (not started: to the components, a crawl that is closing)."""
    values = {name: getattr(project_settings, name) for name in dir(project_settings)
              if name.isupper()}
    # The add-on's settings for the built-in defaults, then the test's over them: a component
    # test names what it needs and never reads a collector.yaml.
    values.update(config_settings(parse_config("", "defaults")), ADDONS={})
    crawler = get_crawler(spidercls, settings_dict={**values, **settings})
    crawler.spider = spidercls.from_crawler(crawler)
    crawler.engine = crawler._create_engine()
    return crawler
