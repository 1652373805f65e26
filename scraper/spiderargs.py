"""The ``-a`` arguments of the collector's spiders, checked by ``scrapy crawl`` before Scrapy
starts and by the spiders themselves."""

SPIDER_ARGUMENTS = ("shard",)
"""The ``-a`` arguments every collector spider takes; anything else is refused."""


class SpiderArgumentError(ValueError):
    """A ``-a NAME=VALUE`` the spider does not take, or a bad value for one it does."""
