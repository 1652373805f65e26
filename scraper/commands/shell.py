"""``scrapy shell`` with the collector's config and no round bookkeeping (see project.py)."""

from scrapy.commands.shell import Command as ScrapyShellCommand

from scraper.commands.project import CollectorTool


class Command(CollectorTool, ScrapyShellCommand):
    pass
