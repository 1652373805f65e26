"""Scrapy's memory limit (``MEMUSAGE_*``), judged on the resident set the worker has now, checked
by one timer with no log line per check.

Scrapy's ``MemoryUsage`` reads ``ru_maxrss``: the process's peak, which ``execve`` keeps. A
``scrapy crawl`` started from a large process (a test runner, a notebook, a shell script run by a
big supervisor) would begin above the limit and close at once with ``memusage_exceeded``. The
current resident set (psutil) is this process's own, and what the limit is about.

Scrapy also starts a looping call each for the ``memusage/max`` statistic, the limit and the
warning, and the limit's logs ``Peak memory usage is …MiB`` at INFO every time: with the
1-second interval the 200 MB bound needs (``MEMUSAGE_CHECK_INTERVAL_SECONDS``), three wake-ups
and a log line per second in every worker. Here one call per interval reads the size once and
does all three; what happens at the limit and the warning is Scrapy's own (``memusage_exceeded``
and one ERROR line; ``memusage_warning_reached`` once).
"""

from __future__ import annotations

import psutil
from scrapy.extensions.memusage import MemoryUsage
from scrapy.utils.asyncio import create_looping_call


class ResidentMemoryUsage(MemoryUsage):
    def get_virtual_size(self) -> int:
        return int(psutil.Process().memory_info().rss)

    def engine_started(self) -> None:
        self._stats.set_value("memusage/startup", self.get_virtual_size())
        task = create_looping_call(self.check)
        self.tasks = [task]
        task.start(self.check_interval, now=True)

    def check(self) -> None:
        size = self.get_virtual_size()
        self._stats.max_value("memusage/max", size)
        if self.limit and size > self.limit:
            self._check_limit()  # Scrapy's: one ERROR line, the round closes
        if self.warning and not self.warned and size > self.warning:
            self._check_warning()  # Scrapy's: once
