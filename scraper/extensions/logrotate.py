"""Size-based rotation of a spider-shard's log (``LOG_FILE``): ``.log`` → ``.log.1`` → …

Scrapy installs a plain ``logging.FileHandler`` for ``LOG_FILE``; this extension rolls that
handler's file over when it passes ``LOG_MAX_BYTES``, keeping ``LOG_BACKUP_COUNT`` old files,
checked at start and every ``LOG_ROTATE_INTERVAL`` seconds while crawling.
"""

from __future__ import annotations

import errno
import io
import logging
import os
from pathlib import Path

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.log import get_scrapy_root_handler
from twisted.internet import task


def open_log(path: Path, encoding: str | None = "utf-8") -> io.TextIOWrapper:
    """``path`` opened for appending (created 0644 if missing), never through a symbolic link:
    a log is written by every worker all the time, so a link would let anyone who can write the
    logs directory append to any file this user can write. Raises OSError naming the path."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "it is a symbolic link, which is never followed; "
                          "replace it by a file", str(path)) from None
        raise
    return open(fd, "a", encoding=encoding)


def rollover(path: Path, backups: int) -> None:
    """Shift ``path`` → ``path.1`` → … → ``path.{backups}``, dropping the oldest."""
    for n in range(backups - 1, 0, -1):
        older = Path(f"{path}.{n}")
        if older.exists():
            os.replace(older, f"{path}.{n + 1}")
    if path.exists():
        os.replace(path, f"{path}.1")


class LogRotation:
    def __init__(self, handler: logging.FileHandler, max_bytes: int, backups: int,
                 interval: float) -> None:
        self.handler = handler
        self.path = Path(handler.baseFilename)
        self.max_bytes = max_bytes
        self.backups = backups
        self.loop = task.LoopingCall(self.check)
        self.interval = interval

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LogRotation:
        handler = get_scrapy_root_handler()
        max_bytes = crawler.settings.getint("LOG_MAX_BYTES")
        if not isinstance(handler, logging.FileHandler) or max_bytes <= 0:
            raise NotConfigured
        extension = cls(handler, max_bytes, crawler.settings.getint("LOG_BACKUP_COUNT"),
                        crawler.settings.getfloat("LOG_ROTATE_INTERVAL"))
        crawler.signals.connect(extension.engine_started, signal=signals.engine_started)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        extension.check()
        return extension

    def engine_started(self) -> None:
        self.loop.start(self.interval, now=False)

    def engine_stopped(self) -> None:
        if self.loop.running:
            self.loop.stop()

    def check(self) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            size = 0
        if size < self.max_bytes:
            return
        self.handler.acquire()
        try:
            old = self.handler.setStream(open(os.devnull, "w"))  # noqa: SIM115
            if old is not None:
                old.close()
            rollover(self.path, self.backups)
            devnull = self.handler.setStream(open_log(self.path, self.handler.encoding))
            if devnull is not None:
                devnull.close()
        finally:
            self.handler.release()
