"""How the cron jobs speak: a line on stdout (cron mails it) and, if configured, a webhook POST.

The watchdog and the size monitor are meant to be silent unless something is worth a message, so
everything they say goes through :func:`say`. A webhook that is down, slow or refusing must never
block the check, change its exit status or add to stdout (that would turn one mail into two), so
its failures go to the runner's log only.
"""

from __future__ import annotations

import json
import logging
import threading
from urllib.parse import urlsplit

from scraper.config import CollectorConfig
from scraper.layout import DataLayout

WEBHOOK_TIMEOUT = 3.0
"""Seconds one POST may take, connect to last byte; chat webhooks answer in well under one."""

_FORMAT = logging.Formatter("%(asctime)s [%(name)s] %(levelname)s: %(message)s")
"""The runner's own log format, so these lines read like the rest of ``runner.log``."""


def say(config: CollectorConfig, line: str) -> None:
    """Print ``line`` for cron's mail and POST it to ``notify.webhook_url`` when configured."""
    print(line, flush=True)
    if config.notify.webhook_url:
        post_webhook(config.notify.webhook_url, line, DataLayout(config.data_dir))


def post_webhook(url: str, text: str, layout: DataLayout,
                 timeout: float = WEBHOOK_TIMEOUT) -> bool:
    """POST ``{"text": text}`` as JSON; False (and a line in runner.log) when it did not work.

    The request runs in a daemon thread joined with a deadline: urllib's timeout covers each
    socket operation but not name resolution, and a cron check must not hang on a broken DNS.
    """
    outcome: list[str] = []

    def send() -> None:
        import urllib.request

        request = urllib.request.Request(
            url, data=json.dumps({"text": text}).encode(), method="POST",
            headers={"Content-Type": "application/json", "User-Agent": "hubcollect"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                response.read(4096)
            outcome.append("")
        except Exception as exc:  # any failure is only logged: see the module docstring
            outcome.append(f"{type(exc).__name__}: {exc}")

    thread = threading.Thread(target=send, name="webhook", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    error = outcome[0] if outcome else f"no answer within {timeout:g} s"
    if error:
        # Only scheme and host: a webhook URL's path is usually its secret.
        parts = urlsplit(url)
        log_to_runner_log(layout, "runner.notify", logging.WARNING,
                          f"webhook POST to {parts.scheme}://{parts.netloc} failed: {error}")
    return not error


def log_to_runner_log(layout: DataLayout, name: str, level: int, message: str) -> None:
    """Append one line to ``logs/runner.log`` from a process that is not the runner.

    Appends are atomic for a line this short, so it interleaves cleanly with the runner's own
    writes. A log that cannot be written is ignored: the caller's job matters more.
    """
    record = logging.LogRecord(name, level, __file__, 0, message, None, None)
    try:
        layout.logs_dir.mkdir(parents=True, exist_ok=True)
        with open(layout.runner_log, "a", encoding="utf-8") as log:
            log.write(_FORMAT.format(record) + "\n")
    except OSError:
        pass
