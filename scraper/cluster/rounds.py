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
* **Leases.** What a pop takes is not gone from Redis: it moves to the worker's
  ``leases:{worker}`` hash (a reliable queue's processing list) until the worker is done with
  it — its page parsed and what it found queued (:mod:`scraper.cluster.leases`), or a retry
  or redirect of it queued in its place. The busy marker is the lease's visibility timeout:
  when a worker's marker lapses (its box was killed, or cut off longer than
  ``DISTRIBUTED_LEASE``), the next worker to beat or look puts its leases back in the queue,
  so every page of the round is still fetched by the workers left. A worker that closes
  before its round ends gives its unfinished leases back at once.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

from scraper.redis import defaults
from scraper.redis.connection import RedisLink, process_id
from scraper.redis.keys import Keys

# Redis time as a float, inside a script.
_NOW = "local t = redis.call('TIME'); local now = tonumber(t[1]) + tonumber(t[2]) / 1e6\n"

# A pop whose answer is lost (a timeout: Redis may have run it — a stopped Redis runs what it
# had received once it resumes) must not lose what it took. Each pop carries a token; the
# worker's last pop is kept under {p}:{spider}:popped:{worker} and a retry with the same token
# gets that again instead of popping anew. A new token is used only after an answer arrived.
# A pop answers a flat array (lease id, entry, lease id, entry, …): binary-safe, as an entry
# someone else wrote may be anything (it is refused after, never decoded here).
_REPLAY = """
if redis.call('HGET', KEYS[3], 'token') == ARGV[3] then
  local n = tonumber(redis.call('HGET', KEYS[3], 'n') or '0')
  local out = {}
  for i = 1, n do out[i] = redis.call('HGET', KEYS[3], 'v' .. i) end
  return out
end
"""
_KEEP = """
redis.call('DEL', KEYS[3])
redis.call('HSET', KEYS[3], 'token', ARGV[3], 'n', #out)
for i, v in ipairs(out) do redis.call('HSET', KEYS[3], 'v' .. i, v) end
redis.call('EXPIRE', KEYS[3], 3600)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
return out
"""

# Each entry taken is leased (KEYS[4] leases hash, KEYS[5] lease counter, KEYS[6] lessees):
# lease id → where it came from ("start", or its queue score), a newline, the entry.
_LEASE = """
local out = {}
local function lease(origin, entry)
  local id = tostring(redis.call('INCR', KEYS[5]))
  redis.call('HSET', KEYS[4], id, origin .. '\\n' .. entry)
  out[#out + 1] = id
  out[#out + 1] = entry
end
redis.call('SADD', KEYS[6], ARGV[1])
"""

POP_START = _NOW + _REPLAY + """
local items = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[4]) - 1)
if #items == 0 then return false end
redis.call('LTRIM', KEYS[1], #items, -1)
""" + _LEASE + """
for _, item in ipairs(items) do lease('start', item) end
""" + _KEEP

POP_REQUEST = _NOW + _REPLAY + """
local popped = redis.call('ZPOPMIN', KEYS[1], 1)
if #popped == 0 then return false end
""" + _LEASE + """
lease(popped[2], popped[1])
""" + _KEEP

# Leases of workers whose busy marker lapsed go back where they came from. KEYS: lessees,
# busy, request queue, start list; ARGV[1]: the leases hash prefix. A function, so the scripts
# that decide the round (CHECK_IDLE, LOOK) reclaim first and never call a round over while a
# dead worker's requests are still leased.
_RECLAIM = """
local function reclaim(lessees, busy, queue, starts, prefix, now)
  local n = 0
  for _, w in ipairs(redis.call('SMEMBERS', lessees)) do
    local expiry = redis.call('ZSCORE', busy, w)
    if not expiry or tonumber(expiry) < now then
      for _, v in ipairs(redis.call('HVALS', prefix .. w)) do
        local cut = string.find(v, '\\n', 1, true)
        local origin, entry = string.sub(v, 1, cut - 1), string.sub(v, cut + 1)
        if origin == 'start' then redis.call('LPUSH', starts, entry)
        else redis.call('ZADD', queue, origin, entry) end
        n = n + 1
      end
      redis.call('DEL', prefix .. w)
      redis.call('SREM', lessees, w)
    end
  end
  return n
end
"""

RECLAIM = _NOW + _RECLAIM + "return reclaim(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], now)"

# A worker closing mid-round: its unfinished leases go back now, its marker goes.
GIVE_BACK = _NOW + _RECLAIM + """
redis.call('ZREM', KEYS[2], ARGV[2])
return reclaim(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], now)
"""

BEAT = _NOW + _RECLAIM + """
if ARGV[3] == '1' then redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1]) end
return reclaim(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[4], now)
"""

# Idle: this worker's engine holds nothing, so what it leased is done (an ack that did not
# arrive is dropped, not given back). KEYS[5] lessees, ARGV[3] leases hash prefix.
CHECK_IDLE = _NOW + _RECLAIM + """
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('DEL', ARGV[3] .. ARGV[1])
redis.call('SREM', KEYS[5], ARGV[1])
local n = reclaim(KEYS[5], KEYS[3], KEYS[2], KEYS[1], ARGV[3], now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('LLEN', KEYS[1]) > 0 or redis.call('ZCARD', KEYS[2]) > 0 then return {'work', n} end
if redis.call('ZCARD', KEYS[3]) > 0 then return {'wait', n} end
if redis.call('HGET', KEYS[4], 'state') == 'active' then
  redis.call('HSET', KEYS[4], 'state', 'finished', 'finished_at', tostring(now),
             'next_round_at', tostring(now + tonumber(ARGV[2])))
end
return {'done', n}
"""

# Read under the seed lock: the round, and whether anything is still going on in it.
LOOK = _NOW + _RECLAIM + """
reclaim(KEYS[5], KEYS[3], KEYS[2], KEYS[1], ARGV[1], now)
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
        self.reclaimed = 0  # other workers' leases this one gave back to the queue
        self.ledger_round = ""  # the round's stamp in the gap ledger (scraper/cluster/ledger.py)
        self._pop_token = secrets.token_hex(8)
        client = link.client
        self._pop_start = client.register_script(POP_START)
        self._pop_request = client.register_script(POP_REQUEST)
        self._beat = client.register_script(BEAT)
        self._check_idle = client.register_script(CHECK_IDLE)
        self._look = client.register_script(LOOK)
        self._give_back = client.register_script(GIVE_BACK)

    @property
    def _activity_keys(self) -> list[str]:
        k, s = self.keys, self.spider
        return [k.start_urls(s), k.requests(s), k.busy(s), k.round(s), k.lessees(s)]

    @property
    def _reclaim_keys(self) -> list[str]:
        k, s = self.keys, self.spider
        return [k.lessees(s), k.busy(s), k.requests(s), k.start_urls(s)]

    def _pop(self, script: Any, key: str, *extra: Any) -> list[tuple[str, bytes]]:
        k, s = self.keys, self.spider
        data = script(keys=[key, k.busy(s), k.popped(s, self.worker), k.leases(s, self.worker),
                            k.lease_seq(s), k.lessees(s)],
                      args=[self.worker, self.busy_ttl, self._pop_token, *extra])
        # Answered: the next pop is a new one. (On RedisUnavailable the token stays, and the
        # retry gets whatever this pop may have taken.)
        self._pop_token = secrets.token_hex(8)
        if data:
            self.working = True
        flat = list(data or [])
        return [(lease.decode(), entry) for lease, entry in zip(flat[::2], flat[1::2],
                                                                strict=True)]

    def pop_start(self, batch: int) -> list[tuple[str, bytes]]:
        """Up to ``batch`` start entries, each with its lease id."""
        return self._pop(self._pop_start, self.keys.start_urls(self.spider), batch)

    def pop_request(self, queue_key: str) -> tuple[str, bytes] | None:
        """The next queued request and its lease id."""
        popped = self._pop(self._pop_request, queue_key)
        return popped[0] if popped else None

    def ack(self, *leases: str) -> None:
        """This worker is done with these entries: they are no longer given back."""
        self.link.client.hdel(self.keys.leases(self.spider, self.worker), *leases)

    def beat(self) -> int:
        """Keep this worker's busy marker (its leases) alive while it has work, and give back
        the leases of workers whose marker lapsed; returns how many went back."""
        reclaimed = int(self._beat(keys=self._reclaim_keys,
                                   args=[self.worker, self.busy_ttl,
                                         "1" if self.working else "0",
                                         self.keys.leases_prefix(self.spider)]))
        self.reclaimed += reclaimed
        return reclaimed

    def check_idle(self, cooldown: float) -> str:
        """This worker is idle: ``work`` (queued), ``wait`` (others busy) or ``done``."""
        self.working = False
        verdict, reclaimed = self._check_idle(
            keys=self._activity_keys, args=[self.worker, cooldown,
                                            self.keys.leases_prefix(self.spider)])
        self.reclaimed += int(reclaimed)
        return verdict.decode() if isinstance(verdict, bytes) else str(verdict)

    def leave(self) -> int:
        """At close: the leases not finished go back to the queue; returns how many."""
        self.working = False
        return int(self._give_back(keys=self._reclaim_keys,
                                   args=[self.keys.leases_prefix(self.spider), self.worker]))

    def look(self) -> Look:
        now, state, round_id, next_at, activity = self._look(
            keys=self._activity_keys, args=[self.keys.leases_prefix(self.spider)])
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
