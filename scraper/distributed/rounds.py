"""A spider's round, cluster-wide: who seeds it, who has work in flight, when it is over.

One worker per machine and spider — or twenty — all pull from one queue, so "my round is over"
cannot be decided alone. The rules, each an atomic step in Redis:

* **Seed once.** The first worker of a spider to start when no round is running takes
  ``seed-lock``, opens round ``id + 1`` (clears the round's dupefilter), pushes the spider's
  whole, unsharded start list to ``start_urls`` and marks the round ``active`` — one
  transaction. Everyone else joins that round. A round that is ``finished`` is not seeded again
  before ``next_round_at`` (``round_interval`` after it ended): workers that start in between
  find nothing to do and end at once, exactly like a worker between two rounds on one machine.
* **Busy markers.** Taking anything from ``start_urls`` or the request queue marks the worker
  busy in the same script (``busy``: worker id → expiry, Redis's clock); heartbeats keep the
  marker alive while the worker has work in flight; a dead worker's marker lapses after
  ``BUSY_TTL``.
* **Round end.** A worker whose engine is idle drops its own marker and looks: work queued →
  take it; another worker busy → wait (it may queue more); neither → the round is over (marked
  ``finished``) and this worker closes. So ``--once`` terminates on every machine.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from scraper.distributed import defaults
from scraper.distributed.connection import RedisLink, process_id
from scraper.distributed.keys import Keys

# Redis time as a float, inside a script.
_NOW = "local t = redis.call('TIME'); local now = tonumber(t[1]) + tonumber(t[2]) / 1e6\n"

# A pop whose answer is lost (a timeout: Redis may have run it — a stopped Redis runs what it
# had received once it resumes) must not lose what it took. Each pop carries a token; the
# worker's last pop is kept under {p}:{spider}:popped:{worker} and a retry with the same token
# gets that again instead of popping anew. A new token is used only after an answer arrived.
_REPLAY = """
local last = redis.call('HMGET', KEYS[3], 'token', 'data')
if last[1] == ARGV[3] then return last[2] end
"""
_KEEP = """
redis.call('HSET', KEYS[3], 'token', ARGV[3], 'data', data)
redis.call('EXPIRE', KEYS[3], 3600)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
return data
"""

POP_START = _NOW + _REPLAY + """
local items = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[4]) - 1)
if #items == 0 then return false end
redis.call('LTRIM', KEYS[1], #items, -1)
local data = cjson.encode(items)
""" + _KEEP

POP_REQUEST = _NOW + _REPLAY + """
local popped = redis.call('ZPOPMIN', KEYS[1], 1)
if #popped == 0 then return false end
local data = popped[1]
""" + _KEEP

BEAT = _NOW + "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1]) return 1"

CHECK_IDLE = _NOW + """
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('LLEN', KEYS[1]) > 0 or redis.call('ZCARD', KEYS[2]) > 0 then return 'work' end
if redis.call('ZCARD', KEYS[3]) > 0 then return 'wait' end
if redis.call('HGET', KEYS[4], 'state') == 'active' then
  redis.call('HSET', KEYS[4], 'state', 'finished', 'finished_at', tostring(now),
             'next_round_at', tostring(now + tonumber(ARGV[2])))
end
return 'done'
"""

# Read under the seed lock: the round, and whether anything is still going on in it.
LOOK = _NOW + """
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local busy = redis.call('LLEN', KEYS[1]) + redis.call('ZCARD', KEYS[2])
  + redis.call('ZCARD', KEYS[3])
return {tostring(now), redis.call('HGET', KEYS[4], 'state') or '',
        redis.call('HGET', KEYS[4], 'id') or '0',
        redis.call('HGET', KEYS[4], 'next_round_at') or '0', busy}
"""


@dataclass(frozen=True, slots=True)
class Look:
    now: float
    state: str  # "", "active", "finished"
    round_id: int
    next_round_at: float
    activity: int  # start entries + queued requests + busy workers

    def decide(self) -> str:
        """``join`` the round there is, or ``seed`` a new one."""
        if self.state == "active":
            # An active round with nothing queued and nobody busy was abandoned (its workers
            # were killed): start afresh rather than wait a round_interval for nothing.
            return "join" if self.activity else "seed"
        if self.state == "finished" and self.now < self.next_round_at:
            return "join"
        return "seed"


class SpiderRound:
    """The Redis side of one spider's rounds, for this worker process."""

    def __init__(self, link: RedisLink, keys: Keys, spider: str, *,
                 busy_ttl: float = defaults.BUSY_TTL) -> None:
        self.link = link
        self.keys = keys
        self.spider = spider
        self.worker = str(process_id())
        self.busy_ttl = busy_ttl
        self.working = False  # this worker holds work taken from Redis
        self.round_id = 0
        self.joined = False  # the spider has joined or seeded a round: its per-round state is set
        self._pop_token = secrets.token_hex(8)
        client = link.client
        self._pop_start = client.register_script(POP_START)
        self._pop_request = client.register_script(POP_REQUEST)
        self._beat = client.register_script(BEAT)
        self._check_idle = client.register_script(CHECK_IDLE)
        self._look = client.register_script(LOOK)

    @property
    def _activity_keys(self) -> list[str]:
        k, s = self.keys, self.spider
        return [k.start_urls(s), k.requests(s), k.busy(s), k.round(s)]

    def _pop(self, script: Any, key: str, *extra: Any) -> bytes | None:
        k, s = self.keys, self.spider
        data = script(keys=[key, k.busy(s), k.popped(s, self.worker)],
                      args=[self.worker, self.busy_ttl, self._pop_token, *extra])
        # Answered: the next pop is a new one. (On RedisUnavailable the token stays, and the
        # retry gets whatever this pop may have taken.)
        self._pop_token = secrets.token_hex(8)
        if data:
            self.working = True
        return data or None

    def pop_start(self, batch: int) -> list[bytes]:
        data = self._pop(self._pop_start, self.keys.start_urls(self.spider), batch)
        return [item.encode() for item in json.loads(data)] if data else []

    def pop_request(self, queue_key: str) -> bytes | None:
        return self._pop(self._pop_request, queue_key)

    def beat(self) -> None:
        """Keep this worker's busy marker alive while it has work (heartbeat)."""
        if self.working:
            self._beat(keys=[self.keys.busy(self.spider)], args=[self.worker, self.busy_ttl])

    def check_idle(self, cooldown: float) -> str:
        """This worker is idle: ``work`` (queued), ``wait`` (others busy) or ``done``."""
        self.working = False
        result = self._check_idle(keys=self._activity_keys, args=[self.worker, cooldown])
        return result.decode() if isinstance(result, bytes) else str(result)

    def leave(self) -> None:
        self.working = False
        self.link.client.zrem(self.keys.busy(self.spider), self.worker)

    def look(self) -> Look:
        now, state, round_id, next_at, activity = self._look(keys=self._activity_keys)
        text = [v.decode() if isinstance(v, bytes) else str(v) for v in (now, state, round_id,
                                                                          next_at)]
        return Look(float(text[0]), text[1], int(text[2] or 0), float(text[3] or 0),
                    int(activity))

    def seed_commands(self, look: Look, entries: list[str]) -> tuple[int, list[list[str]]]:
        """The one transaction that opens round ``look.round_id + 1`` with ``entries``."""
        k, s = self.keys, self.spider
        new_id = look.round_id + 1
        commands = [["DEL", k.dupefilter(s)], ["DEL", k.start_urls(s)]]
        if entries:
            commands.append(["RPUSH", k.start_urls(s), *entries])
        commands += [
            ["HDEL", k.round(s), "finished_at", "next_round_at"],
            ["HSET", k.round(s), "id", str(new_id), "state", "active",
             "started_at", repr(look.now), "seeded_by", self.worker,
             "entries", str(len(entries)), "seeded_wall", repr(time.time())],
        ]
        return new_id, commands

    def run(self, commands: list[list[str]]) -> None:
        pipe = self.link.client.pipeline(transaction=True)
        for command in commands:
            pipe.execute_command(*command)
        pipe.execute()


_rounds: dict[tuple[int, str], SpiderRound] = {}


def get_round(link: RedisLink, keys: Keys, spider: str) -> SpiderRound:
    """One per process and spider: the spider, its queue and the heartbeat share its state."""
    key = (id(link), spider)
    spider_round = _rounds.get(key)
    if spider_round is None or spider_round.link is not link:
        spider_round = _rounds[key] = SpiderRound(link, keys, spider)
    return spider_round
