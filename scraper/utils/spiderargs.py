"""The ``-a`` arguments of the collector's spiders, checked by ``scrapy crawl`` before Scrapy
starts and by the spiders themselves."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

RESET_ARGUMENTS = ("deltafetch_reset", "contenthash_reset")
"""scrapy-deltafetch's own switch, and ours for content: ignore what was collected before, for
this run (the stores are kept and updated)."""
SPIDER_ARGUMENTS = ("shard", *RESET_ARGUMENTS)
"""The ``-a`` arguments every collector spider takes; anything else is refused."""
SCRAPYD_ARGUMENTS = ("_job", "_version")
"""What scrapyd adds to every crawl it launches (``-a _job=ID``, and ``-a _version=V`` when
scheduled with one): accepted, kept as spider attributes, never deciding what is fetched."""

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


class SpiderArgumentError(ValueError):
    """A ``-a NAME=VALUE`` the spider does not take, or a bad value for one it does."""


def parse_switch(name: str, value: object) -> bool:
    """``-a NAME=1`` and friends; a value that is neither yes nor no is refused, never guessed."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise SpiderArgumentError(f"-a {name}={value!r} is not valid: expected 1 or 0 "
                              f"(true/false, yes/no)")


def reset_requested(crawler: Crawler, what: str) -> bool:
    """``-s {WHAT}_RESET=1`` or ``-a {what}_reset=1`` (scrapy-deltafetch's two switches)."""
    return (crawler.settings.getbool(f"{what.upper()}_RESET")
            or bool(getattr(crawler.spider, f"{what}_reset", False)))
