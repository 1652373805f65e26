"""``CONTENTHASH_STORAGE`` on Redis: the same rule as on one machine, for every machine at once.

On one machine a hash is stored once its item is written, and an item whose hash is stored (or
in flight in this process) is dropped. Across machines "in flight" must be shared too, or two
workers would both write a page that sits under two URLs. So:

* ``process_item`` *claims* the hash — one script: not in ``contenthash`` (written items) and
  ``SET claim:{hash} worker NX EX CLAIM_TTL`` — or drops the item as a duplicate;
* once the item is written (``item_written``) the claim is *confirmed*: the hash goes into
  ``contenthash`` and the claim is deleted (write-behind: never lost, see :mod:`writebehind`);
* an item that is not written after all (a later pipeline failed) releases its claim.

A claim names its worker, and holds only while that worker is *busy* (its marker in
``{p}:{spider}:busy``, the visibility timeout of its leases, :mod:`scraper.cluster.rounds`):
a worker has work in flight whenever it holds a claim, so a claim whose holder's marker lapsed
or went is a dead worker's, and the next worker that meets the content takes it over and writes
it. So a box killed between claim and write loses nothing: the worker that pages its leased
requests again (after ``DISTRIBUTED_LEASE``) writes what it had claimed, in the same round.
A kill between write and confirm may let the content be written once more — the same
"duplicate a line, never lose one" as on one machine; so may a box cut off from Redis past the
lease that wrote what it had claimed meanwhile. ``CLAIM_TTL`` only bounds how long a claim key
stays in Redis. The rule is :class:`scraper.dedup.contenthash.ContentHashPipeline`'s (which
waits while Redis is away); the store is per spider for the whole cluster.
"""

from __future__ import annotations

import calendar
import time

from scrapy.crawler import Crawler

from scraper.redis.connection import RedisLink, RedisOutage, get_link, process_id
from scraper.redis.keys import Keys
from scraper.redis.writebehind import WriteBehind, write_behind

# Idempotent for its owner: a claim whose answer was lost (a timeout) is asked again, and
# must not then find its own claim and drop the item as a duplicate. A hash written before
# ARGV[4] (its collected_at, Unix seconds; CONTENTHASH_RESET) counts as not written. Another
# worker's claim counts while that worker is busy (KEYS[3], expiry on Redis's clock); a claim of
# a worker whose marker lapsed is taken over (2: counted by the caller).
CLAIM = """
local written = redis.call('HGET', KEYS[1], ARGV[1])
if written and tonumber(written) >= tonumber(ARGV[4]) then return 0 end
local holder = redis.call('GET', KEYS[2])
if holder == ARGV[2] then return 1 end
local answer = 1
if holder then
  local expiry = redis.call('ZSCORE', KEYS[3], holder)
  local t = redis.call('TIME')
  if expiry and tonumber(expiry) >= tonumber(t[1]) + tonumber(t[2]) / 1e6 then return 0 end
  answer = 2
end
redis.call('SET', KEYS[2], ARGV[2], 'EX', tonumber(ARGV[3]))
return answer
"""

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def unix_seconds(stamp: str) -> int:
    """An item's ``collected_at`` (``2026-12-01T10:00:00Z``) as Unix seconds: 5 bytes in a
    listpack where the text takes 21."""
    return calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))


class RedisContentHashStore(RedisOutage):
    def __init__(self, link: RedisLink, keys: Keys, spider: str, writes: WriteBehind, *,
                 owner: str, claim_ttl: int, ignore_before: str = "") -> None:
        self.link, self.keys, self.writes = link, keys, writes
        self.owner = owner
        self.claim_ttl = claim_ttl
        self.taken_over = 0
        """Claims of workers that stopped being busy (dead boxes) this store took over."""
        self.open_spider(spider, ignore_before)
        self._claim = link.client.register_script(CLAIM)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisContentHashStore:
        settings = crawler.settings
        return cls(get_link(settings["REDIS_URL"]), Keys.from_settings(settings), "",
                   write_behind(crawler), owner=str(process_id()),
                   claim_ttl=settings.getint("DISTRIBUTED_CLAIM_TTL"))

    def open_spider(self, spider: str, ignore_before: str) -> None:
        self.spider = spider
        self.ignore_before = unix_seconds(ignore_before) if ignore_before else 0

    def claim(self, digest: str) -> bool:
        """True if this worker may write the content (raises RedisUnavailable)."""
        key, field = self.keys.contenthash(self.spider, digest)
        answer = int(self._claim(keys=[key, self.keys.claim(self.spider, digest),
                                       self.keys.busy(self.spider)],
                                 args=[field, self.owner, self.claim_ttl, self.ignore_before]))
        if answer == 2:
            self.taken_over += 1
        return bool(answer)

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

    def close_spider(self) -> None:
        """Nothing of its own: writes go through the worker's write-behind."""
