"""The time stamps items carry, without Scrapy: the catalog's commands stamp with them too."""

from __future__ import annotations

import time


def utc_stamp() -> str:
    """Now as items stamp ``collected_at``: ISO-8601 UTC to the second, ordered as text."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def next_second_stamp() -> str:
    """The stamp of the next whole second, once it has begun: everything stamped before this
    call sorts below it, everything stamped after it does not. ``collected_at`` holds whole
    seconds, so a reset that took the current second would leave what was written earlier in
    that second counted as this run's."""
    start = int(time.time()) + 1
    time.sleep(max(0.0, start - time.time()))
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start))
