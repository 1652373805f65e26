"""The worker's presence in the cluster: an extension, on in Redis mode only.

* ``{p}:proc:{id}`` — this process (host, pid, spider, shard, round), refreshed every
  ``HEARTBEAT_INTERVAL`` with a ``PROC_TTL``: ``status`` lists workers per machine from it, and
  the GitHub budget frees the tickets of a process whose key has lapsed;
* the busy marker of the spider's round, kept alive while this worker holds work;
* the write-behind queue (:mod:`writebehind`): flushed on each heartbeat, spilled at close;
* Redis's state in the worker's stats (``distributed/redis_*``), which the worker's state file
  carries to ``python -m runner status``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from scraper.cluster.rounds import get_round
from scraper.redis import defaults
from scraper.redis.connection import RedisUnavailable, get_link, process_id
from scraper.redis.keys import Keys
from scraper.redis.writebehind import write_behind
from scraper.utils.layout import worker_slug
from scraper.utils.sharding import sharded_spider

logger = logging.getLogger("scraper.cluster")


class DistributedWorker:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.get("REDIS_URL"):
            raise NotConfigured("no REDIS_URL: one-machine mode")
        self.crawler = crawler
        self.link = get_link(settings["REDIS_URL"])
        self.keys = Keys.from_settings(settings)
        self.interval = settings.getfloat("DISTRIBUTED_HEARTBEAT_INTERVAL")
        self.proc_id = process_id()
        self.started_at = time.time()
        self.loop = task.LoopingCall(self.beat)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DistributedWorker:
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self) -> None:
        spider = sharded_spider(self.crawler)
        self.round = get_round(self.link, self.keys, spider.name)
        self.writes = write_behind(self.crawler)
        self.beat()
        self.loop.start(self.interval, now=False)

    def _record(self) -> dict[str, Any]:
        spider = sharded_spider(self.crawler)
        return {"host": socket.gethostname(), "pid": os.getpid(), "runner_pid": os.getppid(),
                "spider": spider.name, "shard": str(spider.shard),
                "slug": worker_slug(spider.name, spider.shard), "round": self.round.round_id,
                "working": self.round.working, "started_at": self.started_at,
                "updated_at": time.time()}

    def beat(self) -> None:
        try:
            self.link.client.set(self.keys.proc(self.proc_id), json.dumps(self._record()),
                                 ex=int(defaults.PROC_TTL))
            reclaimed = self.round.beat()
            if reclaimed:
                # A box stopped beating with requests taken: they are the cluster's again.
                logger.info("gave back %d requests leased by workers that stopped answering",
                            reclaimed)
            self.writes.flush()
        except RedisUnavailable:
            pass  # the link logged it; the next beat (or any call) probes again
        self._stats()

    def _stats(self) -> None:
        stats, link = self.crawler.stats, self.link
        assert stats is not None
        stats.set_value("distributed/redis_up", int(link.up))
        stats.set_value("distributed/redis_down_since", link.down_since or 0)
        stats.set_value("distributed/redis_outages", link.outages)
        stats.set_value("distributed/redis_down_seconds", round(link.down_seconds, 1))
        writes = getattr(self, "writes", None)
        stats.set_value("distributed/writes_waiting", len(writes.pending) if writes else 0)
        spider_round = getattr(self, "round", None)
        if spider_round is not None and spider_round.reclaimed:
            stats.set_value("distributed/leases_reclaimed", spider_round.reclaimed)

    def spider_closed(self) -> None:
        if self.loop.running:
            self.loop.stop()
        if not hasattr(self, "writes"):
            return
        self.writes.close()
        try:
            given_back = self.round.leave()
            if given_back:
                self.crawler.stats.set_value("distributed/leases_given_back", given_back)
            self.link.client.delete(self.keys.proc(self.proc_id))
        except RedisUnavailable:
            pass  # the keys lapse on their own
        self._stats()
