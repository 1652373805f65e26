"""The spider side: scrapy-redis's RedisMixin, with the ``start()`` Scrapy ≥ 2.16 calls.

scrapy-redis 0.9.1 only defines ``start_requests``, which Scrapy ≥ 2.16 never calls when a
spider has ``start()``; its start URLs are then read only from the ``spider_idle`` signal —
fragile, and untested upstream on new Scrapy. Here:

* :meth:`DistributedSpider.start` (async) joins the spider's current round or seeds a new one
  (see :mod:`scraper.cluster.rounds`), then reads the round's start entries from Redis
  (upstream's ``next_requests``/``start_urls`` key) until none is left. Seeding runs the
  collector spider's own ``start()`` over its whole, unsharded start list and stores each request
  as JSON (URL, method, headers, meta, callback and errback names), so the requests a worker
  reads back are exactly the ones the spider makes on one machine.
* :meth:`DistributedSpider.spider_idle` ends the worker's round only when the round is over for
  the whole cluster, and looks again every ``IDLE_POLL`` seconds while other workers are busy.
* In this mode the shard (``-a shard=i/N``) only names the worker's files: every worker of a
  spider, on every machine, takes the next request from the one shared queue — docs pages,
  trending pages and search pages alike, with dedup and the GitHub budget shared in Redis.

The collector spiders stay as they are: ``scrapy crawl`` wraps the spider class in this mixin
(:func:`scraper.cluster.spiderloader.distributed_class`) when a Redis URL is configured.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from redis.exceptions import LockError
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.asyncio import sleep
from scrapy_redis.spiders import RedisMixin

from scraper.cluster.leases import LEASE_META, Leased
from scraper.cluster.ledger import LEDGER_ROUND_FIELD, plan_commands, this_box
from scraper.cluster.rounds import SpiderRound, get_round
from scraper.docpages.sites import site_prefix
from scraper.redis import defaults
from scraper.redis.connection import RedisLink, RedisUnavailable, get_link
from scraper.redis.keys import Keys
from scraper.utils.engine import call_later, engine_closing
from scraper.utils.ledger import stamp_ms
from scraper.utils.sharding import UNSHARDED, Shard

if TYPE_CHECKING:
    from twisted.internet.base import DelayedCall

logger = logging.getLogger("scraper.cluster")


def _json_safe(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def encode_request(request: Request) -> str:
    """A start request as scrapy-redis's JSON start entry, with what our spiders need too."""
    def name(method: Any) -> str | None:
        return getattr(method, "__name__", None) if callable(method) else None

    headers = {key.decode("latin-1"): [v.decode("latin-1") for v in values]
               for key, values in request.headers.items()}
    return json.dumps({
        "url": request.url, "method": request.method, "headers": headers,
        "meta": {k: v for k, v in request.meta.items() if _json_safe(v)},
        "callback": name(request.callback), "errback": name(request.errback),
        "dont_filter": request.dont_filter, "priority": request.priority,
    }, sort_keys=True)


class DistributedSpider(RedisMixin):
    """Mixed in before a collector spider class (see
    :func:`scraper.cluster.spiderloader.distributed_class`)."""

    crawler: Crawler
    name: str
    shard: Shard  # the collector spider's
    link: RedisLink
    keys: Keys
    round: SpiderRound
    cooldown: float
    seeded: bool = False
    _wake_call: DelayedCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.setup_redis(crawler)  # upstream: start URLs key, batch size, spider_idle hook
        settings = crawler.settings
        spider.link = get_link(settings["REDIS_URL"])
        spider.keys = Keys.from_settings(settings)
        spider.round = get_round(spider.link, spider.keys, spider.name)
        spider.round.busy_ttl = settings.getfloat("DISTRIBUTED_LEASE")
        spider.cooldown = float(settings.getdict("ROUND_INTERVALS").get(
            spider.name, settings.getfloat("ROUND_INTERVAL")))
        return spider

    # --- scrapy-redis hooks ------------------------------------------------------------------

    def pop_list_queue(self, redis_key: str, batch_size: int) -> list[bytes]:
        """Upstream's LRANGE+LTRIM, as one script that also marks this worker busy and leases
        what it took (freed once the request made of it is in the shared queue)."""
        return [Leased.of(lease, data) for lease, data in self.round.pop_start(batch_size)]

    def make_request_from_data(self, data: bytes | str) -> Request | list[Request]:
        """A start entry (JSON, see :func:`encode_request`) back into the spider's request."""
        try:
            entry = json.loads(data)
            url = entry["url"]
        except (ValueError, TypeError, KeyError):
            logger.warning("not a start entry, skipped: %r", data[:200])
            if getattr(data, "lease", ""):
                self.round.ack(data.lease)  # type: ignore[union-attr]
            return []
        callback = getattr(self, entry.get("callback") or "parse", None) or self.parse
        errback_name = entry.get("errback") or "request_failed"
        request = Request(
            url, method=entry.get("method", "GET"), headers=entry.get("headers"),
            meta=entry.get("meta") or {}, callback=callback,
            errback=getattr(self, errback_name, None),
            dont_filter=entry.get("dont_filter", True), priority=entry.get("priority", 0),
        )
        if getattr(data, "lease", ""):
            request.meta[LEASE_META] = data.lease  # type: ignore[union-attr]
        return self.complete_start_request(request)

    def complete_start_request(self, request: Request) -> Request:
        """Fill in what an entry pushed by hand (``{"url": …}``) lacks; per spider."""
        request.meta.setdefault("deltafetch_enabled", False)  # a listing page: read each round
        return request

    # --- start --------------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[Any]:
        while True:
            try:
                await self._join_or_seed()
                break
            except RedisUnavailable:
                if not await self.link.wait_until_up(lambda: engine_closing(self.crawler)):
                    return
        self.round.joined = True
        self._wake()  # the scheduler held back the queue until now
        self.crawler.stats.set_value("distributed/round", self.round.round_id)
        while True:
            try:
                batch = list(self.next_requests())
            except RedisUnavailable:
                if not await self.link.wait_until_up(lambda: engine_closing(self.crawler)):
                    return
                continue
            if not batch:
                return
            for request in batch:
                self.crawler.stats.inc_value("distributed/start_entries/start")
                yield request

    async def _join_or_seed(self) -> None:
        lock = self.server.lock(self.keys.seed_lock(self.name), timeout=defaults.SEED_LOCK_TTL,
                                thread_local=False)
        while not lock.acquire(blocking=False):
            await sleep(0.05)
        try:
            look = self.round.look()
            if look.decide() == "join":
                self.round.round_id = look.round_id
                self.round.ledger_round = self._ledger_round()
                self.seeded = False
                self.joined_round(look.round_id)
                return
            requests = await self._unsharded_start()
            round_id, commands = self.round.seed_commands(
                look, [encode_request(r) for r in requests])
            commands += self.seed_extra(round_id, requests)
            stamp = stamp_ms()
            if self.crawler.settings.getbool("LEDGER_ENABLED"):  # else no box records outcomes
                commands += plan_commands(self.keys, self.name, round_id, stamp,
                                          getattr(self, "ledger_kind", "entry"), requests,
                                          this_box(self.crawler))
            self.round.run(commands)
            self.round.round_id = round_id
            self.round.ledger_round = stamp
            self.seeded = True
            self.joined_round(round_id)
            self.crawler.stats.set_value("distributed/seeded_entries", len(requests))
            logger.info("round %d of %s: seeded %d start entries for the cluster", round_id,
                        self.name, len(requests))
        finally:
            # Expired (it has a TTL) or Redis is gone: nothing to give back then.
            with contextlib.suppress(LockError, RedisUnavailable):
                lock.release()

    def _ledger_round(self) -> str:
        stamp = self.server.hget(self.keys.round(self.name), LEDGER_ROUND_FIELD)
        return stamp.decode() if isinstance(stamp, bytes) else str(stamp or "")

    async def _unsharded_start(self) -> list[Request]:
        """The collector spider's own ``start()`` over its whole start list."""
        shard, self.shard = self.shard, UNSHARDED
        try:
            return [r async for r in super().start() if isinstance(r, Request)]
        finally:
            self.shard = shard

    def seed_extra(self, round_id: int, requests: list[Request]) -> list[list[str]]:
        """More commands for the seeding transaction (per spider)."""
        return []

    def joined_round(self, round_id: int) -> None:
        """Called once this worker knows its round (per spider)."""

    def site_set_key(self, request: Request) -> str:
        """A Redis set that queuing ``request`` adds its URL to ("" for none; per spider)."""
        return ""

    # --- the end of a round -------------------------------------------------------------------

    def spider_idle(self) -> None:
        """Upstream's idle hook, deciding for the cluster (see :mod:`rounds`)."""
        try:
            if self._schedule_start_batch():
                raise DontCloseSpider
            verdict = self.round.check_idle(self.cooldown)
        except RedisUnavailable:
            self._wake_later()
            raise DontCloseSpider from None
        if verdict == "done":
            logger.info("round %d of %s is over: queue drained, no worker busy",
                        self.round.round_id, self.name)
            return
        self._wake_later()
        raise DontCloseSpider

    def _schedule_start_batch(self) -> int:
        """Entries pushed to ``start_urls`` after the round began (by hand): crawl them too."""
        count = 0
        for request in self.next_requests():
            self.crawler.engine.crawl(request)
            self.crawler.stats.inc_value("distributed/start_entries/idle")
            count += 1
        return count

    def _wake_later(self) -> None:
        if self._wake_call is None or not self._wake_call.active():
            self._wake_call = call_later(defaults.IDLE_POLL, self._wake)

    def _wake(self) -> None:
        # Scrapy looks at an idle spider's scheduler only every 5 s (its slot heartbeat): ask
        # for a look now. Private, read defensively: without it the 5 s heartbeat still works.
        slot = getattr(self.crawler.engine, "_slot", None)
        nextcall = getattr(slot, "nextcall", None)
        if nextcall is not None:
            nextcall.schedule()



class RedisUrlSet:
    """One docs site's asked URLs this round, shared: what the spider's local set was."""

    def __init__(self, client: Any, key: str) -> None:
        self.client = client
        self.key = key
        self.local: set[str] = set()  # ours and those seen asked: never asked about again
        self.pending: set[str] = set()  # ours admitted, not yet in Redis's set (being queued)

    def __contains__(self, url: object) -> bool:
        if url in self.local:
            return True
        try:
            found = bool(self.client.sismember(self.key, url))
        except RedisUnavailable:
            return False  # the shared dupefilter still stops a second fetch
        if found:
            self.local.add(str(url))
        return found

    def __len__(self) -> int:
        try:
            return int(self.client.scard(self.key)) + len(self.pending)
        except RedisUnavailable:
            return len(self.local)

    def queued(self, url: str) -> None:
        """Its request is being queued: Redis's set counts it from now on."""
        self.pending.discard(url)

    def discard(self, url: str) -> None:
        self.local.discard(url)
        self.pending.discard(url)
        with contextlib.suppress(RedisUnavailable):
            self.client.srem(self.key, url)

    def add(self, url: str) -> None:
        # Redis's set gains the URL in the script that queues its request (the scheduler asks
        # the spider's site_set_key): a box killed in between leaves it neither asked nor
        # queued, so the page that found it, given back and parsed again, asks it once more.
        self.local.add(url)
        self.pending.add(url)


class RedisSiteUrls(dict[str, RedisUrlSet]):
    """docs' ``site_urls`` (site prefix → URLs asked this round), one Redis set per site, so
    ``max_pages_per_site`` caps the cluster's round, not each worker's. The cap is checked and
    then added to, not atomically: it can be passed by at most one page per busy worker."""

    def __init__(self, client: Any, keys: Keys, spider: str, round_id: int) -> None:
        super().__init__()
        self.client, self.redis_keys, self.spider, self.round_id = client, keys, spider, round_id

    def __missing__(self, prefix: str) -> RedisUrlSet:
        value = self[prefix] = RedisUrlSet(
            self.client, self.redis_keys.site(self.spider, self.round_id, prefix))
        return value

    def setdefault(self, prefix: str, default: Any = None) -> RedisUrlSet:
        return self[prefix]


class DistributedDocsSpider(DistributedSpider):
    """docs: its per-site page cap and "already asked" set move to Redis, per round."""

    site_urls: Any

    def complete_start_request(self, request: Request) -> Request:
        request = super().complete_start_request(request)
        request.meta.setdefault("site", site_prefix(request.url))
        return request

    def seed_extra(self, round_id: int, requests: list[Request]) -> list[list[str]]:
        commands = []
        for request in requests:
            if request.meta.get("site") is None:
                continue  # a sitemap: no page of a site
            key = self.keys.site(self.name, round_id, request.meta["site"])
            commands.append(["SADD", key, request.url])
            commands.append(["EXPIRE", key, str(defaults.SITE_SET_TTL)])
        return commands

    def joined_round(self, round_id: int) -> None:
        self.site_urls = RedisSiteUrls(self.server, self.keys, self.name, round_id)

    def site_set_key(self, request: Request) -> str:
        """The round's set of its site's asked URLs, which queuing ``request`` adds it to."""
        site = request.meta.get("site")
        if not site:
            return ""
        asked = getattr(self, "site_urls", {}).get(site)
        if isinstance(asked, RedisUrlSet):
            asked.queued(request.url)
        return self.keys.site(self.name, self.round.round_id, site)
