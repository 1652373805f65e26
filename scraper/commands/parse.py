"""``scrapy parse`` with the collector's config and no round bookkeeping (see project.py)."""

from scrapy.commands.parse import Command as ScrapyParseCommand

from scraper.commands.project import CollectorTool


class Command(CollectorTool, ScrapyParseCommand):
    pass
