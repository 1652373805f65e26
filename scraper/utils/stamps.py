"""The time stamps items carry, without Scrapy: the catalog's commands stamp with them too."""

from __future__ import annotations

import time


def utc_stamp() -> str:
    """Now as items stamp ``collected_at``: ISO-8601 UTC to the second, ordered as text."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
