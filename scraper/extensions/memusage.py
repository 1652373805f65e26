"""Scrapy's memory limit (``MEMUSAGE_*``), judged on the resident set the worker has now.

Scrapy's ``MemoryUsage`` reads ``ru_maxrss``: the process's peak, which ``execve`` keeps. A
``scrapy crawl`` started from a large process (a test runner, a notebook, a shell script run by a
big supervisor) would begin above the limit and close at once with ``memusage_exceeded``. The
resident set from ``/proc/self/statm`` is this process's own, and what the limit is about.
"""

from __future__ import annotations

import os

from scrapy.extensions.memusage import MemoryUsage

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def resident_bytes() -> int | None:
    """The current resident set in bytes, or None where ``/proc`` is not there."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return None


class ResidentMemoryUsage(MemoryUsage):
    def get_virtual_size(self) -> int:
        resident = resident_bytes()
        return super().get_virtual_size() if resident is None else resident
