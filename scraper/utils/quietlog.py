"""Scrapy's start-up inventory kept out of every round's log.

At each crawl's start Scrapy logs, at INFO, the add-ons, extensions, middlewares and pipelines it
enabled and every setting that differs from its defaults: about 4 KB that are the same in every
round of every worker, forked once a minute for months. With ``LOG_STARTUP_COMPONENTS`` off (the
default) those records are dropped at their loggers; ``-s LOG_STARTUP_COMPONENTS=1`` shows
them again. Warnings from the same loggers are kept.
"""

from __future__ import annotations

import logging

from scrapy.settings import BaseSettings

STARTUP_MESSAGES = {
    "scrapy.addons": "Enabled addons:",
    "scrapy.middleware": "Enabled %(componentname)ss:",
    "scrapy.crawler": "Overridden settings:",
}
"""Logger name → how Scrapy's inventory message template starts."""


class StartupInventoryFilter(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno <= logging.INFO and isinstance(record.msg, str)
                    and record.msg.startswith(self.prefix))


def quiet_startup(settings: BaseSettings) -> None:
    """Install the filters unless ``LOG_STARTUP_COMPONENTS`` asks for the inventory."""
    if settings.getbool("LOG_STARTUP_COMPONENTS"):
        return
    for name, prefix in STARTUP_MESSAGES.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, StartupInventoryFilter) for f in logger.filters):
            logger.addFilter(StartupInventoryFilter(prefix))
