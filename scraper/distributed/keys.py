"""Every Redis key the distributed mode uses, and every default it runs on, in one place.

All keys start with a prefix (setting ``REDIS_KEY_PREFIX``, default ``hubcollect``), so one
Redis can serve several collectors (or test runs) side by side::

    {p}:{spider}:start_urls            list  start entries of the current round (JSON), seeded
                                             once per round; scrapy-redis's "start URLs" key
    {p}:{spider}:requests              zset  the shared request queue (scrapy-redis, JSON)
    {p}:{spider}:dupefilter            set   request fingerprints of the current round
    {p}:{spider}:round                 hash  id, state (active|finished), started_at,
                                             finished_at, next_round_at, seeded_by, entries
    {p}:{spider}:seed-lock             str   held while a worker decides/seeds a round
    {p}:{spider}:busy                  zset  worker id → expiry: workers with work in flight
    {p}:{spider}:popped:{worker}       hash  a worker's last pop (token, data): a pop whose
                                             answer was lost is answered again, not lost
    {p}:{spider}:site:{round}:{sha1}   set   docs: URLs asked per site this round (page cap)
    {p}:{spider}:deltafetch:{key}      str   time a page was collected; TTL = refresh_after
    {p}:{spider}:links:{key}           str   JSON list of the page's links (the replay)
    {p}:{spider}:contenthash           hash  content hash → collected_at: written items
    {p}:{spider}:claim:{hash}          str   worker id holding the hash between process_item
                                             and the item being written; TTL = claim TTL
    {p}:budget:state                   str   the GitHub budget's tables (JSON snapshot)
    {p}:budget:lock                    str   held for one budget transaction
    {p}:budget:etag:{identity}:{sha1}  str   last ETag of a search page; TTL 30 days
    {p}:proc:{id}                      str   a live worker process (JSON); TTL, heartbeats
    {p}:runner:{host}:{pid}            str   a live runner (JSON); TTL, heartbeats

Times written into Redis for cluster decisions (rounds, busy markers) come from Redis's own
clock (``TIME`` inside Lua), so machines with skewed clocks still agree.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

DEFAULT_PREFIX = "hubcollect"

REDIS_URL_ENV = "COLLECTOR_REDIS_URL"
"""Set by ``python -m runner --redis-url`` for its workers; ``scrapy crawl`` honours it over
the config's ``redis_url``, so a worker stays exactly ``scrapy crawl SPIDER -a shard=i/N``."""

# --- connection ----------------------------------------------------------------------------------
SOCKET_TIMEOUT = 2.0
"""Seconds a command may take. Short: every call runs on the worker's reactor thread, and a
stopped (SIGSTOP) Redis must cost a worker a couple of seconds per probe, not minutes."""
CONNECT_TIMEOUT = 2.0
BACKOFF_START = 0.5
"""First pause after Redis is found unreachable; doubles per failed probe ..."""
BACKOFF_MAX = 10.0
"""... up to this: a Redis that is back is noticed within this many seconds."""

# --- rounds, heartbeats --------------------------------------------------------------------------
HEARTBEAT_INTERVAL = 2.0
"""Seconds between a worker's heartbeats (busy marker, process key, write-behind flush)."""
BUSY_TTL = 15.0
"""A worker's "work in flight" marker lapses after this long without a heartbeat: a killed
worker holds the others' round open at most this long."""
PROC_TTL = 30.0
"""A worker's process key lapses after this long without a heartbeat (it is then dead to the
budget, which frees its tickets, and gone from ``status``)."""
IDLE_POLL = 0.25
"""Seconds between looks at the shared queue while this worker is idle and others are busy."""
SEED_LOCK_TTL = 10.0
"""Seeding takes milliseconds; a seeder killed holding the lock delays the others this long."""
SITE_SET_TTL = 2 * 86400
"""docs' per-site sets belong to one round; they expire on their own."""

# --- dedup stores --------------------------------------------------------------------------------
CLAIM_TTL = 600
"""Seconds a content hash stays claimed by a worker that has not confirmed it (a dead worker's
claims free the content for the others after this long)."""
LINKS_TTL_MARGIN = 86400
"""A page's stored links outlive its "collected" record by this much: a skipped page always has
its links to replay."""

# --- budget --------------------------------------------------------------------------------------
BUDGET_LOCK_TTL = 5.0
"""A budget transaction is milliseconds; a holder that stalls longer loses the lock (and its
write is refused), so one stuck process never stops the cluster's GitHub requests."""
ETAG_TTL = 30 * 86400

# --- runners -------------------------------------------------------------------------------------
RUNNER_BEAT_INTERVAL = 5.0
RUNNER_TTL = 30.0


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Keys:
    """Key names under one prefix."""

    prefix: str = DEFAULT_PREFIX

    def _spider(self, spider: str, part: str) -> str:
        return f"{self.prefix}:{spider}:{part}"

    # scrapy-redis's own settings take %-formats: these are what the settings are set to.
    @property
    def queue_format(self) -> str:
        return f"{self.prefix}:%(spider)s:requests"

    @property
    def dupefilter_format(self) -> str:
        return f"{self.prefix}:%(spider)s:dupefilter"

    @property
    def start_urls_format(self) -> str:
        return f"{self.prefix}:%(name)s:start_urls"

    def requests(self, spider: str) -> str:
        return self._spider(spider, "requests")

    def dupefilter(self, spider: str) -> str:
        return self._spider(spider, "dupefilter")

    def start_urls(self, spider: str) -> str:
        return self._spider(spider, "start_urls")

    def round(self, spider: str) -> str:
        return self._spider(spider, "round")

    def seed_lock(self, spider: str) -> str:
        return self._spider(spider, "seed-lock")

    def busy(self, spider: str) -> str:
        return self._spider(spider, "busy")

    def popped(self, spider: str, worker: str) -> str:
        return self._spider(spider, f"popped:{worker}")

    def site(self, spider: str, round_id: int, site_prefix: str) -> str:
        return self._spider(spider, f"site:{round_id}:{_digest(site_prefix)}")

    def deltafetch(self, spider: str, key: bytes) -> str:
        return self._spider(spider, f"deltafetch:{key.hex()}")

    def links(self, spider: str, key: bytes) -> str:
        return self._spider(spider, f"links:{key.hex()}")

    def contenthash(self, spider: str) -> str:
        return self._spider(spider, "contenthash")

    def claim(self, spider: str, digest: str) -> str:
        return self._spider(spider, f"claim:{digest}")

    @property
    def budget_state(self) -> str:
        return f"{self.prefix}:budget:state"

    @property
    def budget_lock(self) -> str:
        return f"{self.prefix}:budget:lock"

    def etag(self, identity: str, url: str) -> str:
        return f"{self.prefix}:budget:etag:{identity}:{_digest(url)}"

    def proc(self, proc_id: int | str) -> str:
        return f"{self.prefix}:proc:{proc_id}"

    @property
    def proc_pattern(self) -> str:
        return f"{self.prefix}:proc:*"

    def runner(self, host: str, pid: int) -> str:
        return f"{self.prefix}:runner:{host}:{pid}"

    @property
    def runner_pattern(self) -> str:
        return f"{self.prefix}:runner:*"
