"""Politeness per site for the whole cluster, not per worker (Redis mode only).

Scrapy's politeness lives in each process's download slot: ``CONCURRENT_REQUESTS_PER_DOMAIN``
at once, ``DOWNLOAD_DELAY`` (or AutoThrottle's delay) between two. With one shared queue every
docs worker on every box may take the next page of the same site, so a site would get that
politeness once per worker. This download handler makes the slot's limits the cluster's: it
wraps the scheme's own handler (``DISTRIBUTED_DOWNLOAD_HANDLER``) and, right before a request
is sent — after the worker's own slot let it go, so nothing delays it between its turn and the
wire — takes a turn from Redis:

* ``{p}:polite:{host}:inflight`` (zset, request → lease expiry): at most the slot's concurrency
  entries; each is removed when its answer (or failure) is in, renewed by the sender's
  heartbeat while it waits for one, and lapses ``DISTRIBUTED_LEASE`` after a killed box's last;
* ``{p}:polite:{host}:last`` (Redis time of the last request sent): a turn is given only when
  the slot's delay has passed since, whichever box sent it;

one script, on Redis's clock. The delay is the larger of the slot's ``DOWNLOAD_DELAY``
(``DOWNLOAD_SLOTS`` per host, as Scrapy reads it) and, with AutoThrottle on, the delay
AutoThrottle set on this worker's slot: the cluster keeps the pace one worker's AutoThrottle
would keep alone. Requests of one host wait their turn in this worker one at a time, so only
one of them asks Redis. The GitHub web pace (``web_min_interval``) is the shared budget's
(``{p}:budget:*``), already one for the cluster. While Redis is unreachable requests wait
with the rest of the worker's shared work.
"""

from __future__ import annotations

import contextlib
import itertools
import random

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.asyncio import sleep
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet import defer, task

from scraper.redis.connection import RedisUnavailable, get_link, process_id
from scraper.redis.keys import Keys

POLL = 0.02
"""Seconds between two asks for a turn of a host at its limit (jittered): turns come back as
answers do, within a few tens of milliseconds."""

TAKE = """
local t = redis.call('TIME'); local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return -1 end
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local delay = tonumber(ARGV[3])
if now - last < delay then return math.ceil((delay - (now - last)) * 1000) end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[1])
redis.call('SET', KEYS[2], tostring(now), 'EX', 3600)
redis.call('EXPIRE', KEYS[1], 3600)
return 0
"""

RENEW = """
local t = redis.call('TIME'); local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
for i, key in ipairs(KEYS) do
  if redis.call('ZSCORE', key, ARGV[i + 1]) then
    redis.call('ZADD', key, now + tonumber(ARGV[1]), ARGV[i + 1])
  end
end
return 1
"""



class ClusterPoliteDownloadHandler:
    """``DOWNLOAD_HANDLERS`` for http and https in Redis mode (see the module docstring)."""

    lazy = False

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.get("REDIS_URL"):
            raise NotConfigured("politeness is per worker on one machine")
        self.crawler = crawler
        self.inner = build_from_crawler(load_object(settings["DISTRIBUTED_DOWNLOAD_HANDLER"]),
                                        crawler)
        self.link = get_link(settings["REDIS_URL"])
        self.keys = Keys.from_settings(settings)
        self.lease = settings.getfloat("DISTRIBUTED_LEASE")
        self.per_host = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
        self.delay = settings.getfloat("DOWNLOAD_DELAY")
        self.slots = settings.getdict("DOWNLOAD_SLOTS")
        self.autothrottle = settings.getbool("AUTOTHROTTLE_ENABLED")
        self._take = self.link.client.register_script(TAKE)
        self._renew = self.link.client.register_script(RENEW)
        self._ids = itertools.count(1)
        self._prefix = f"{process_id()}:"
        self._held: dict[str, str] = {}  # member → host: turns in flight
        self._queues: dict[str, defer.DeferredLock] = {}
        self.loop = task.LoopingCall(self.renew)
        self.interval = settings.getfloat("DISTRIBUTED_HEARTBEAT_INTERVAL")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ClusterPoliteDownloadHandler:
        return cls(crawler)

    async def download_request(self, request: Request) -> Response:
        turn = await self.take_turn(request)
        try:
            return await self.inner.download_request(request)
        finally:
            if turn is not None:
                self.give_back(*turn)

    async def close(self) -> None:
        if self.loop.running:
            self.loop.stop()
        for member, host in list(self._held.items()):
            self.give_back(host, member)
        await self.inner.close()

    # --- the slot's limits, as Scrapy's downloader reads them --------------------------------

    def limits(self, request: Request, host: str) -> tuple[int, float]:
        slot = self.slots.get(host) or {}
        concurrency = int(slot.get("concurrency", self.per_host))
        delay = float(slot.get("delay", self.delay))
        engine = self.crawler.engine
        if self.autothrottle and engine is not None:
            local = engine.downloader.slots.get(engine.downloader.get_slot_key(request))
            if local is not None:
                delay = max(delay, float(local.delay))
        return max(1, concurrency), delay

    # --- turns ----------------------------------------------------------------------------

    async def take_turn(self, request: Request) -> tuple[str, str] | None:
        """Wait for this request's turn at its host; (host, member), or None if it goes
        unchecked (the worker stops while Redis is away)."""
        host = self.crawler.engine.downloader.get_slot_key(request) if self.crawler.engine \
            else ""
        if not host:
            return None
        if not self.loop.running:
            self.loop.start(self.interval, now=False)
        lock = self._queues.setdefault(host, defer.DeferredLock())
        await maybe_deferred_to_future(lock.acquire())
        try:
            member = f"{self._prefix}{next(self._ids)}"
            while True:
                concurrency, delay = self.limits(request, host)
                try:
                    wait = int(self._take(keys=[self.keys.polite_inflight(host),
                                                self.keys.polite_last(host)],
                                          args=[member, concurrency, delay, self.lease]))
                except RedisUnavailable:
                    if not await self.link.wait_until_up(self._closing):
                        return None
                    continue
                if wait == 0:
                    self._held[member] = host
                    return host, member
                await sleep(POLL * (0.5 + random.random()) if wait < 0 else wait / 1000)
        finally:
            lock.release()

    def give_back(self, host: str, member: str) -> None:
        self._held.pop(member, None)
        with contextlib.suppress(RedisUnavailable):  # else it lapses after the lease
            self.link.client.zrem(self.keys.polite_inflight(host), member)

    def renew(self) -> None:
        """Heartbeat: this worker's turns in flight stay its own while it waits for them."""
        if not self._held:
            return
        turns = list(self._held.items())
        with contextlib.suppress(RedisUnavailable):
            self._renew(keys=[self.keys.polite_inflight(host) for _, host in turns],
                        args=[self.lease, *(member for member, _ in turns)])

    def _closing(self) -> bool:
        from scraper.utils.engine import engine_closing

        return engine_closing(self.crawler)
