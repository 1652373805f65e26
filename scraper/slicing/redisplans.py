"""``SLICEPLAN_STORAGE`` on Redis: one hash for the cluster, ``{p}:search:plans``, query → its
plan as JSON. Each call is one Redis command or script, so a plan is written whole, atomically:
a worker reads the previous plan or the new one, never part of one, and :meth:`replace` (compare
and set, in Lua) lets exactly one of two workers that planned the same query at once win."""

from __future__ import annotations

from scrapy.crawler import Crawler

from scraper.redis.connection import RedisLink, RedisOutage, as_text, get_link
from scraper.redis.keys import Keys
from scraper.slicing.plans import decode_plan, encode_plan
from scraper.slicing.slices import Slice

# ARGV[2] is the expected plan as stored (its JSON), "" for none.
REPLACE = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
if (current or '') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""


class RedisSlicePlanStore(RedisOutage):
    def __init__(self, link: RedisLink, keys: Keys) -> None:
        self.link = link
        self.key = keys.slice_plans
        self._replace = link.client.register_script(REPLACE)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisSlicePlanStore:
        settings = crawler.settings
        return cls(get_link(settings["REDIS_URL"]), Keys.from_settings(settings))

    def load(self, query: str) -> list[Slice] | None:
        raw = self.link.client.hget(self.key, query)
        return None if raw is None else decode_plan(raw)

    def save(self, query: str, slices: list[Slice]) -> None:
        self.link.client.hset(self.key, query, encode_plan(slices))

    def replace(self, query: str, expected: list[Slice] | None, slices: list[Slice]) -> bool:
        if expected is None:  # none, or one this version cannot read (load() says None too)
            raw = self.link.client.hget(self.key, query)
            old = as_text(raw) if raw is not None and decode_plan(raw) is None else ""
        else:
            old = encode_plan(expected)
        return bool(self._replace(keys=[self.key], args=[query, old, encode_plan(slices)]))

    def close(self) -> None:
        """The connection is the process's shared one."""
