"""Content-hash dedup on Redis: the same rule as on one machine, for every machine at once.

On one machine a hash is stored once its item is written, and an item whose hash is stored (or
in flight in this process) is dropped. Across machines "in flight" must be shared too, or two
workers would both write a page that sits under two URLs. So:

* ``process_item`` *claims* the hash — one script: not in ``contenthash`` (written items) and
  ``SET claim:{hash} worker NX EX CLAIM_TTL`` — or drops the item as a duplicate;
* once the item is written (``item_scraped``) the claim is *confirmed*: the hash goes into
  ``contenthash`` and the claim is deleted (write-behind: never lost, see :mod:`writebehind`);
* an item that is not written after all (a later pipeline failed) releases its claim.

A worker killed between claim and write leaves a claim that lapses after ``CLAIM_TTL``: that
content is collected by a later round, never lost. A kill between write and confirm may let the
content be written once more after the claim lapses — the same "duplicate a line, never lose
one" as on one machine. The rule is :class:`scraper.contenthash.ContentHashDedup`'s; the
store is per spider for the whole cluster.
"""

from __future__ import annotations

import calendar
import time

import scrapy
from scrapy import Spider
from scrapy.exceptions import DropItem

from scraper.contenthash import ContentHashDedup
from scraper.distributed.connection import RedisLink, RedisUnavailable, get_link, process_id
from scraper.distributed.keys import Keys
from scraper.distributed.worker import write_behind
from scraper.distributed.writebehind import WriteBehind
from scraper.engine import engine_closing
from scraper.items import is_deduplicated

# Idempotent for its owner: a claim whose answer was lost (a timeout) is asked again, and
# must not then find its own claim and drop the item as a duplicate. A hash written before
# ARGV[4] (its collected_at, Unix seconds; CONTENTHASH_RESET) counts as not written; claims
# always count.
CLAIM = """
local written = redis.call('HGET', KEYS[1], ARGV[1])
if written and tonumber(written) >= tonumber(ARGV[4]) then return 0 end
local holder = redis.call('GET', KEYS[2])
if holder == ARGV[2] then return 1 end
if holder then return 0 end
redis.call('SET', KEYS[2], ARGV[2], 'EX', tonumber(ARGV[3]))
return 1
"""

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def unix_seconds(stamp: str) -> int:
    """An item's ``collected_at`` (``2026-12-01T10:00:00Z``) as Unix seconds: 5 bytes in a
    listpack where the text takes 21."""
    return calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))


class RedisContentHashStore:
    def __init__(self, link: RedisLink, keys: Keys, spider: str, writes: WriteBehind, *,
                 owner: str, claim_ttl: int, ignore_before: str = "") -> None:
        self.link, self.keys, self.spider, self.writes = link, keys, spider, writes
        self.owner = owner
        self.claim_ttl = claim_ttl
        self.ignore_before = unix_seconds(ignore_before) if ignore_before else 0
        self._claim = link.client.register_script(CLAIM)

    def claim(self, digest: str) -> bool:
        """True if this worker may write the content (raises RedisUnavailable)."""
        key, field = self.keys.contenthash(self.spider, digest)
        return bool(self._claim(keys=[key, self.keys.claim(self.spider, digest)],
                                args=[field, self.owner, self.claim_ttl, self.ignore_before]))

    def confirm(self, digest: str, collected_at: str) -> None:
        key, field = self.keys.contenthash(self.spider, digest)
        self.writes.submit(["HSET", key, field, str(unix_seconds(collected_at))],
                           self._release_command(digest))

    def release(self, digest: str) -> None:
        self.writes.submit(self._release_command(digest))

    def _release_command(self, digest: str) -> list[str]:
        return ["EVAL", RELEASE, "1", self.keys.claim(self.spider, digest), self.owner]

    def __contains__(self, digest: str) -> bool:
        return bool(self.link.client.hexists(*self.keys.contenthash(self.spider, digest)))

    def close(self) -> None:
        """Nothing of its own: writes go through the worker's write-behind."""


class RedisContentHashPipeline(ContentHashDedup):
    store: RedisContentHashStore

    def open_store(self, spider: Spider, ignore_before: str) -> RedisContentHashStore:
        settings = self.crawler.settings
        self.link = get_link(settings["REDIS_URL"])
        return RedisContentHashStore(
            self.link, Keys.from_settings(settings), spider.name,
            write_behind(self.crawler), owner=str(process_id()),
            claim_ttl=settings.getint("DISTRIBUTED_CLAIM_TTL"), ignore_before=ignore_before)

    async def process_item(self, item: scrapy.Item) -> scrapy.Item:  # type: ignore[override]
        digest = self.stamp(item)
        if not is_deduplicated(item):
            return item  # an observation (a page snapshot): recorded every time it is seen
        if digest in self.in_flight or not await self._claim(digest):
            self.duplicate(digest)
        self.in_flight.add(digest)
        return item

    async def _claim(self, digest: str) -> bool:
        while True:
            try:
                return self.store.claim(digest)
            except RedisUnavailable:
                # Pause this item (and, as the scraper fills up, the crawl) until Redis is back;
                # at a stop, leave the page for the next round instead of risking a duplicate.
                if not await self.link.wait_until_up(lambda: engine_closing(self.crawler)):
                    self.stats.inc_value("contenthash/unchecked_at_close")
                    raise DropItem("Redis unreachable at close: not written; the page is "
                                   "fetched again next round", log_level="INFO") from None
