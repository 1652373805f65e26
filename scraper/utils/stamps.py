"""The time stamps items carry, without Scrapy: the catalog's commands stamp with them too."""

from __future__ import annotations

import calendar
import re
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


_MOMENT_RE = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)(?:T(\d\d)(?::(\d\d)(?::(\d\d)(?:\.(\d{1,3}))?)?)?)?Z?")


def stamp_ms(stamp: str) -> int:
    """A UTC moment as milliseconds since the epoch, from a date or a time cut anywhere after
    the hour (``2026-11-30``, ``2026-11-30T12``, ``2026-11-30T12:00:00.123Z``): the first
    moment it names, as text that sorts with fetch stamps would; ValueError for anything else."""
    found = _MOMENT_RE.fullmatch(stamp)
    if found is None:
        raise ValueError(f"{stamp!r} is not a UTC date or time")
    *parts, millis = found.groups()
    seconds = calendar.timegm(time.struct_time(
        (*(int(part or 0) for part in parts), 0, 0, 0)))
    return seconds * 1000 + int((millis or "0").ljust(3, "0"))


def ms_stamp(ms: int) -> str:
    """Milliseconds since the epoch as fetches are stamped: ``2026-11-30T12:00:00.123Z``."""
    seconds, millis = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"
