"""scrapy-redis's Scheduler, thin: persistent, busy-marking, and calm when Redis is away.

What upstream's ``scrapy_redis.scheduler.Scheduler`` (0.9.1) does here that would hurt:

* ``SCHEDULER_PERSIST`` defaults to False: the first worker to close deletes the queue and
  dupefilter every other worker is still using. Here persist is always on (the round's seeding
  clears the dupefilter; a drained queue is empty anyway).
* ``from_settings`` pings Redis and fails the crawl if it is down at start: here the worker
  starts and waits.
* any Redis error inside ``enqueue_request``/``next_request`` kills the request (or the engine
  loop): here, while Redis is unreachable, new requests wait in a local buffer (sent, in order,
  once it is back), ``next_request`` hands out nothing and ``has_pending_requests`` says yes, so
  the worker pauses instead of finishing its round early;
* its dupefilter check and push are two commands: a timeout between them (the answer lost, the
  command perhaps run) would drop the request as "seen" on retry. Here they are one script, and
  pops are answered again when retried (:mod:`scraper.cluster.rounds`), so a timed-out call
  is simply made again.

A request marked :data:`~scraper.cluster.leases.LOCAL_META` (a chain this worker goes on
with under one lease: a search slice's pages) stays in a local queue, handed out before the
shared one, so a worker finishes what it holds before taking more.

The queue is upstream's priority queue; its pop also marks this worker busy in the same script
(see :mod:`scraper.cluster.rounds`), so no worker ever holds work the others can't see.
Its entries are JSON (:mod:`scraper.cluster.serializer`), not upstream's pickle: an entry
that is not one of ours is dropped unread, never unpickled; a request that cannot be written
as JSON is dropped too; each with an ERROR line and a stat.
"""

from __future__ import annotations

import heapq
import importlib
import itertools
import logging
import zlib
from collections import deque
from typing import Any

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.utils.misc import load_object
from scrapy_redis.queue import PriorityQueue
from scrapy_redis.scheduler import Scheduler

from scraper.cluster.leases import LEASE_META, LOCAL_META
from scraper.cluster.rounds import get_round
from scraper.redis import defaults
from scraper.redis.connection import RedisUnavailable, get_link
from scraper.redis.keys import Keys

logger = logging.getLogger("scraper.cluster")

REFUSED_STAT = "distributed/requests_refused"
"""Queue entries that were not this collector's JSON requests, dropped unread."""
UNQUEUEABLE_STAT = "distributed/requests_unqueueable"
"""Requests that could not be written as JSON (a non-JSON meta value, an unnamed callback)."""


# ARGV[4]: the lease this request continues (a retry or redirect of a leased request), freed
# in the same step: the queue holds one of the two at any instant, never both, never neither.
# ARGV[5]/ARGV[6]: a set the URL joins once queued (docs' site set), with its TTL.
ENQUEUE = """
if ARGV[4] ~= '' then redis.call('HDEL', KEYS[3], ARGV[4]) end
if ARGV[1] == '' or redis.call('SADD', KEYS[1], ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
  if ARGV[5] ~= '' then
    redis.call('SADD', ARGV[5], ARGV[7])
    redis.call('EXPIRE', ARGV[5], tonumber(ARGV[6]))
  end
  return 1
end
return 0
"""


class RoundQueue(PriorityQueue):
    """Upstream's priority queue; a pop marks the worker busy in the same Lua script."""

    refused = 0

    def pop(self, timeout: int = 0) -> Request | None:
        spider_round = get_round(self.server.link, Keys(_prefix(self.spider)), self.spider.name)
        if not spider_round.joined:
            # Another worker's requests may be queued while this one still waits for the seed
            # lock; a response parsed now would miss the round's state (docs' site_urls).
            return None
        while popped := spider_round.pop_request(self.key):
            lease, data = popped
            try:
                request = self._decode_request(data)
            # the serializer's Refused; no such callback; a URL or encoding Request refuses
            except (ValueError, TypeError, LookupError) as exc:
                self._refuse(exc)
                spider_round.ack(lease)
                continue
            request.meta[LEASE_META] = lease
            return request
        return None

    def _refuse(self, exc: Exception) -> None:
        # Someone else wrote it: whoever can write to this Redis can fill the queue. One ERROR
        # line per worker says so; a flood of them is counted, not logged line by line.
        self.refused += 1
        stats = self.spider.crawler.stats
        if stats is not None:
            stats.inc_value(REFUSED_STAT)
        level = logging.ERROR if self.refused == 1 else logging.DEBUG
        logger.log(level, "refused an entry of the shared queue %s: %s; dropped unread. Only "
                   "this collector's JSON requests are taken from it: check who can write to "
                   "this Redis (docs/distributed.md). Later ones: stat %s", self.key, exc,
                   REFUSED_STAT)


def queue_score(request: Request) -> float:
    """The request's place in the shared queue: its priority first, as upstream's; then, among
    equals, an order shuffled by a hash of the URL, which mixes the hosts. A sorted set orders
    equal scores by the entry's bytes — its URL first — so one host's pages would come out
    together, and every worker of the cluster would wait on that host's politeness while the
    others' sat idle (what Scrapy's DownloaderAwarePriorityQueue avoids on one machine)."""
    spread = zlib.crc32(request.url.encode()) / 2**33  # in [0, 0.5): never past a priority
    return -request.priority + spread


def site_set_key(spider: Spider, request: Request) -> str:
    key = getattr(spider, "site_set_key", None)  # a DistributedSpider's; "" for none
    return key(request) if key is not None else ""


def _prefix(spider: Spider) -> str:
    return spider.crawler.settings["REDIS_KEY_PREFIX"]


class RedisScheduler(Scheduler):
    df: Any  # upstream's dupefilter, made in open()

    def __init__(self, server: Any, **kwargs: Any) -> None:
        kwargs["persist"] = True
        super().__init__(server, **kwargs)
        # Requests that could not be queued while Redis was away, oldest first.
        self.buffer: deque[Request] = deque()
        # This worker's own chains: (-priority, order, request), Scrapy's order among equals.
        self.local: list[tuple[int, int, Request]] = []
        self._order = itertools.count()
        self._enqueue_script = server.register_script(ENQUEUE)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisScheduler:
        settings = crawler.settings
        kwargs: dict[str, Any] = {
            "flush_on_start": False,
            "idle_before_close": 0,  # a blocking pop would block the reactor
            "queue_key": settings["SCHEDULER_QUEUE_KEY"],
            "queue_cls": settings["SCHEDULER_QUEUE_CLASS"],
            "dupefilter_key": settings["SCHEDULER_DUPEFILTER_KEY"],
            "dupefilter_cls": settings["DUPEFILTER_CLASS"],
        }
        serializer = settings.get("SCHEDULER_SERIALIZER")
        if serializer:  # a module path, as upstream takes it
            kwargs["serializer"] = importlib.import_module(serializer)
        # No ping here (upstream's from_settings pings): a worker started while Redis is away
        # waits for it instead of failing its round.
        scheduler = cls(get_link(settings["REDIS_URL"]).client, **kwargs)
        scheduler.stats = crawler.stats
        return scheduler

    def open(self, spider: Spider) -> None:
        # Upstream's, minus its flush_on_start and its deprecated spider.log() call.
        self.spider = spider
        self.queue = load_object(self.queue_cls)(
            server=self.server, spider=spider, key=self.queue_key % {"spider": spider.name},
            serializer=self.serializer)
        if not self.df:
            self.df = load_object(self.dupefilter_cls).from_spider(spider)
        try:
            queued = len(self.queue)
        except RedisUnavailable:
            return
        if queued:
            logger.info("joining the shared queue of %s: %d requests waiting", spider.name,
                        queued)

    def close(self, reason: str) -> None:
        if self.buffer and not self._flush():
            logger.warning("Redis unreachable at close: %d requests of this worker not queued; "
                           "the next round finds them again", len(self.buffer))
            if self.stats:
                self.stats.set_value("distributed/requests_lost_at_close", len(self.buffer))
        super().close(reason)  # persist: leaves queue and dupefilter in Redis

    def enqueue_request(self, request: Request) -> bool:
        if request.meta.get(LOCAL_META):
            heapq.heappush(self.local, (-request.priority, next(self._order), request))
            if self.stats:
                self.stats.inc_value("scheduler/enqueued/local")
            return True
        if self.buffer and not self._flush():
            self.buffer.append(request)
            return True
        try:
            return self._enqueue(request)
        except RedisUnavailable:
            self.buffer.append(request)
            return True

    def _enqueue(self, request: Request) -> bool:
        """Upstream's dupefilter check and push, as one script: an attempt whose answer is lost
        (Redis may have run it) is simply made again — either both steps happened (the request
        is queued, "seen" now) or neither."""
        lease = request.meta.pop(LEASE_META, "")  # this worker's, not part of the entry
        try:
            data = self.queue._encode_request(request)
        except ValueError as exc:  # the serializer's Refused, or a callback that is no method
            logger.error("cannot queue %s: %s; dropped", request.url, exc)
            if self.stats:
                self.stats.inc_value(UNQUEUEABLE_STAT)
            return False
        fingerprint = "" if request.dont_filter else self.df.request_fingerprint(request)
        name = self.spider.name
        spider_round = get_round(self.server.link, Keys(_prefix(self.spider)), name)
        try:
            queued = self._enqueue_script(
                keys=[self.df.key, self.queue.key, spider_round.keys.leases(name,
                                                                            spider_round.worker)],
                args=[fingerprint, queue_score(request), data, lease,
                      site_set_key(self.spider, request), int(defaults.SITE_SET_TTL),
                      request.url])
        except RedisUnavailable:
            if lease:
                request.meta[LEASE_META] = lease  # freed when the retry gets through
            raise
        if not queued:
            self.df.log(request, self.spider)
            return False
        if self.stats:
            self.stats.inc_value("scheduler/enqueued/redis")
        return True

    def _flush(self) -> bool:
        """Queue the buffered requests, oldest first; True when the buffer is empty."""
        while self.buffer:
            try:
                self._enqueue(self.buffer[0])
            except RedisUnavailable:
                return False
            self.buffer.popleft()
        return True

    def next_request(self) -> Request | None:
        if self.local:
            if self.stats:
                self.stats.inc_value("scheduler/dequeued/local")
            return heapq.heappop(self.local)[2]
        if self.buffer and not self._flush():
            return None
        try:
            request = self.queue.pop()
        except RedisUnavailable:
            return None
        if request is not None and self.stats:
            self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def has_pending_requests(self) -> bool:
        if self.buffer or self.local:
            return True
        try:
            return len(self.queue) > 0
        except RedisUnavailable:
            return True  # unknown: don't let the engine call the round over

    def __len__(self) -> int:
        try:
            return len(self.queue) + len(self.buffer) + len(self.local)
        except RedisUnavailable:
            return len(self.buffer) + len(self.local)
