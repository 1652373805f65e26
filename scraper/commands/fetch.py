"""``scrapy fetch`` with the collector's config and no round bookkeeping (see project.py)."""

from scrapy.commands.fetch import Command as ScrapyFetchCommand

from scraper.commands.project import CollectorTool


class Command(CollectorTool, ScrapyFetchCommand):
    pass
