"""How the cron jobs speak: a line on stdout (cron mails it) and, if configured, a webhook POST.

The watchdog and the size monitor are meant to be silent unless something is worth a message, so
everything they say goes through :func:`say`. A webhook that is down, slow or refusing must never
block the check, change its exit status or add to stdout (that would turn one mail into two), so
its failures go to the runner's log only.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from scraper.config.collector import CollectorConfig
from scraper.utils.layout import DataLayout

if TYPE_CHECKING:
    import urllib.request

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
    target, headers = _without_userinfo(url)
    headers.update({"Content-Type": "application/json", "User-Agent": "hubcollect"})

    # Here: the watchdog and size, every minute, import urllib's HTTP stack only to post.
    import urllib.request

    def send() -> None:
        request = urllib.request.Request(
            target, data=json.dumps({"text": text}).encode(), method="POST", headers=headers)
        opener = urllib.request.build_opener(_same_origin_redirects())
        try:
            with opener.open(request, timeout=timeout) as response:
                response.read(4096)
            outcome.append("")
        except Exception as exc:  # any failure is only logged: see the module docstring
            outcome.append(f"{type(exc).__name__}: {exc}")

    thread = threading.Thread(target=send, name="webhook", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    error = outcome[0] if outcome else f"no answer within {timeout:g} s"
    if error:
        log_to_runner_log(layout, "runner.notify", logging.WARNING,
                          f"webhook POST to {origin(url)} failed: {error}")
    return not error


def origin(url: str) -> str:
    """``scheme://host[:port]``: what may be logged of a URL. Its path is usually the webhook's
    secret, and its userinfo (``user:password@``) always is."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def _without_userinfo(url: str) -> tuple[str, dict[str, str]]:
    """The URL to open and its headers: userinfo becomes Basic auth, as curl does (urllib would
    take ``user:pw@host`` for a host name and leak it in a DNS error)."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, {}
    netloc = parts.netloc.rpartition("@")[2]
    credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    auth = "Basic " + base64.b64encode(credentials.encode()).decode()
    return urlunsplit(parts._replace(netloc=netloc)), {"Authorization": auth}


def _same_origin_redirects() -> urllib.request.HTTPRedirectHandler:
    """A redirect handler that follows a redirect only within the webhook's origin: another
    host would get the message (and urllib turns the POST into a GET there), so it is refused
    and logged instead. Defined when a webhook is posted, with urllib."""
    import urllib.error
    import urllib.request

    class SameOriginRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str,
                             headers: Any, newurl: str) -> urllib.request.Request | None:
            if origin(newurl) != origin(req.full_url):
                raise urllib.error.HTTPError(
                    req.full_url, code, f"redirect to another origin ({origin(newurl)}) refused",
                    headers, fp)
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    return SameOriginRedirects()


def log_to_runner_log(layout: DataLayout, name: str, level: int, message: str) -> None:
    """Append one line to ``logs/runner.log`` from a process that is not the runner.

    Appends are atomic for a line this short, so it interleaves cleanly with the runner's own
    writes. A log that cannot be written is ignored: the caller's job matters more.
    """
    # Here, not at the top: the extension's module imports Scrapy, which the commands that
    # only read the data dir (catalog, status, watchdog) would otherwise pay at every start.
    from scraper.extensions.logrotate import open_log

    record = logging.LogRecord(name, level, __file__, 0, message, None, None)
    try:
        layout.logs_dir.mkdir(parents=True, exist_ok=True)
        with open_log(layout.runner_log) as log:
            log.write(_FORMAT.format(record) + "\n")
    except OSError:
        pass
