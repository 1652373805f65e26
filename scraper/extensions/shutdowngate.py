"""Makes a SIGTERM that arrives while a worker starts up as graceful as one that arrives later.

Scrapy installs its graceful-shutdown handlers only once the reactor has started, and a graceful
stop requested before the engine runs stops the reactor without closing the spider: the round's
item file would stay a ``.part`` until the next start. The runner's forked worker therefore starts
with SIGTERM/SIGINT blocked (held pending by the kernel); this extension unblocks them once the
engine is running, so a pending signal then takes Scrapy's graceful path. Run by hand, nothing is
blocked and unblocking is a no-op.
"""

from __future__ import annotations

import signal

from scrapy import signals
from scrapy.crawler import Crawler

from scraper.utils.engine import call_later

GATED_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def hold_shutdown_signals() -> None:
    """Called by the runner in a fresh worker, before Scrapy starts."""
    signal.pthread_sigmask(signal.SIG_BLOCK, GATED_SIGNALS)


def release_shutdown_signals() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, GATED_SIGNALS)


class ShutdownGate:
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ShutdownGate:
        gate = cls()
        crawler.signals.connect(gate.engine_started, signal=signals.engine_started)
        return gate

    def engine_started(self) -> None:
        # engine_started is sent just before the engine marks itself running: release on the
        # next turn of the loop, when a stop request is honoured with a proper close.
        call_later(0, release_shutdown_signals)
