"""One run of a cron job at a time: a non-blocking ``flock`` on a file under ``state/``.

Cron starts the watchdog every five minutes whether or not the last run has finished (a restart
can take a minute), and a user may run it by hand meanwhile. The second run simply steps aside:
the first one is already doing the job, and two would report (or restart) the same thing twice.
"""

from __future__ import annotations

from scraper.pidlock import exclusive_or_skip

__all__ = ["exclusive_or_skip"]
