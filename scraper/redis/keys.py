"""Every Redis key the distributed mode uses, in one place (its timings: :mod:`.defaults`).

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
    {p}:{spider}:popped:{worker}       hash  a worker's last pop (token, answer): a pop whose
                                             answer was lost is answered again, not lost
    {p}:{spider}:leases:{worker}       hash  lease id → queue entry a worker took and has not
                                             finished; given back when its busy marker lapses
    {p}:{spider}:lessees               set   workers holding leases (whom to look at)
    {p}:{spider}:lease-seq             str   the last lease id handed out
    {p}:polite:{host}:inflight         zset  requests being sent to a host by any box → expiry
    {p}:polite:{host}:last             str   Redis time of the last request sent to a host
    {p}:{spider}:site:{round}:{sha1}   set   docs: URLs asked per site this round (page cap)
    {p}:{spider}:deltafetch:{key}      str   time a page was collected; TTL = refresh_after
    {p}:{spider}:links:{key}           str   JSON list of the page's links (the replay)
    {p}:{spider}:ch:{hhhh}             hash  written items' content hashes, in 65,536 small
                                             hashes by the digest's first 4 hex digits: the
                                             next 24 → collected_at (Unix seconds). Small
                                             hashes are listpacks: ~40 bytes an item
    {p}:{spider}:claim:{hash}          str   worker id holding the hash between process_item
                                             and the item being written; TTL = claim TTL
    {p}:search:plans                   hash  search query → its slice plan (JSON list)
    {p}:budget:state                   str   the GitHub budget's tables (JSON snapshot)
    {p}:budget:lock                    str   held for one budget transaction
    {p}:budget:etag:{identity}:{sha1}  str   last ETag of a search page; TTL 30 days
    {p}:ledger                         stream the gap ledger's events of every box (JSON
                                             lines: plans, sends, outcomes, closes), capped
                                             and expiring (scraper/cluster/ledger.py)
    {p}:proc:{id}                      str   a live worker process (JSON); TTL, heartbeats
    {p}:runner:{host}:{pid}            str   a live runner (JSON); TTL, heartbeats
    {p}:boxes                          hash  box (host:data_dir) → its runner's last heartbeat
                                             (JSON): a box that stops beating stays listed
    {p}:dataset:box                    str   the box that builds the cluster's catalog (JSON)
    {p}:dataset:queue                  list  shipped segments waiting for it, oldest first:
                                             {spider}/{origin box}--{segment}.jsonl.gz
    {p}:dataset:seg:{entry}            hash  a shipped segment: gzip chunks c0, c1, …, size,
                                             chunks
    {p}:dataset:upload:{box}:{entry}   hash  a segment being shipped by a box (TTL: a killed
                                             upload lapses)
    {p}:dataset:bytes                  str   bytes of the shipped segments Redis holds, and of
                                             the uploads begun (reserved at their begin)
    {p}:dataset:reserved               hash  upload key → "{bytes} {deadline}": room taken by
                                             an upload begun, given back at its commit or
                                             when it lapses
    {p}:dataset:ids                    hash  box id → the data dir (path, machine id) that drew it
    {p}:dataset:confirmed:{box}:{spider} list  "{dataset box} {segment}" the dataset box has
                                             written to disk, popped by the box that shipped it

Times written into Redis for cluster decisions (rounds, busy markers) come from Redis's own
clock (``TIME`` inside Lua), so machines with skewed clocks still agree.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from scrapy.settings import BaseSettings

from scraper.settings import REDIS_KEY_PREFIX

CONTENTHASH_BUCKET = 4
"""Hex digits of a content hash naming its small hash: 65,536 of them."""
CONTENTHASH_FIELD = 24
"""Hex digits of a content hash kept as its field."""
PROBE_KEY = "hubcollect:link-probe"
"""Written (expiring in a second) to learn whether a Redis that refused writes takes them again;
outside every prefix, so it is no collector's data."""


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Keys:
    """Key names under one prefix (setting ``REDIS_KEY_PREFIX``)."""

    prefix: str = REDIS_KEY_PREFIX

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Keys:
        return cls(settings["REDIS_KEY_PREFIX"])

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

    def leases(self, spider: str, worker: str) -> str:
        return self._spider(spider, f"leases:{worker}")

    def leases_prefix(self, spider: str) -> str:
        return self._spider(spider, "leases:")

    def lessees(self, spider: str) -> str:
        return self._spider(spider, "lessees")

    def lease_seq(self, spider: str) -> str:
        return self._spider(spider, "lease-seq")

    def polite_inflight(self, host: str) -> str:
        return f"{self.prefix}:polite:{host}:inflight"

    def polite_last(self, host: str) -> str:
        return f"{self.prefix}:polite:{host}:last"

    def site(self, spider: str, round_id: int, site_prefix: str) -> str:
        return self._spider(spider, f"site:{round_id}:{_digest(site_prefix)}")

    def deltafetch(self, spider: str, key: bytes) -> str:
        return self._spider(spider, f"deltafetch:{key.hex()}")

    def links(self, spider: str, key: bytes) -> str:
        return self._spider(spider, f"links:{key.hex()}")

    def contenthash(self, spider: str, digest: str) -> tuple[str, str]:
        """The small hash holding ``digest`` and its field there: 16 + 96 bits of the digest
        (a collision among a billion items has odds below 10^-15), compact as Redis's listpack
        encoding keeps hashes of up to ``hash-max-listpack-entries`` fields."""
        return self._spider(spider, f"ch:{digest[:CONTENTHASH_BUCKET]}"), \
            digest[CONTENTHASH_BUCKET:CONTENTHASH_BUCKET + CONTENTHASH_FIELD]

    def claim(self, spider: str, digest: str) -> str:
        return self._spider(spider, f"claim:{digest}")

    @property
    def slice_plans(self) -> str:
        return f"{self.prefix}:search:plans"

    @property
    def budget_state(self) -> str:
        return f"{self.prefix}:budget:state"

    @property
    def budget_lock(self) -> str:
        return f"{self.prefix}:budget:lock"

    def etag(self, identity: str, url: str) -> str:
        return f"{self.prefix}:budget:etag:{identity}:{_digest(url)}"

    @property
    def ledger(self) -> str:
        return f"{self.prefix}:ledger"

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

    @property
    def boxes(self) -> str:
        return f"{self.prefix}:boxes"

    @property
    def dataset_box(self) -> str:
        return f"{self.prefix}:dataset:box"

    @property
    def dataset_queue(self) -> str:
        return f"{self.prefix}:dataset:queue"

    @property
    def dataset_bytes(self) -> str:
        return f"{self.prefix}:dataset:bytes"

    def dataset_segment(self, entry: str) -> str:
        return f"{self.prefix}:dataset:seg:{entry}"

    def dataset_upload(self, box: str, entry: str) -> str:
        return f"{self.prefix}:dataset:upload:{box}:{entry}"

    @property
    def dataset_reserved(self) -> str:
        return f"{self.prefix}:dataset:reserved"

    @property
    def dataset_ids(self) -> str:
        return f"{self.prefix}:dataset:ids"

    def dataset_confirmed(self, box: str, spider: str) -> str:
        return f"{self.prefix}:dataset:confirmed:{box}:{spider}"
