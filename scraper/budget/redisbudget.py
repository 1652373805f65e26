"""``BUDGET_STORAGE`` on Redis, the GitHub budget for the cluster: two machines on one token
share one budget, never exceed it.

The rules are the budget's own, unchanged: :class:`RedisBudgetStore` *is* a
:class:`~scraper.budget.store.BudgetStore` — booking, claiming, pacing, header sync, pauses,
probes — running on an in-memory copy of the budget's tables. What changes is the transaction:

* ``BEGIN IMMEDIATE`` on a file becomes ``SET {p}:budget:lock token NX PX`` (spinning a few
  milliseconds while another worker holds it);
* the tables are loaded from ``{p}:budget:state`` (one JSON snapshot — a few buckets and the
  tickets in flight, a few KB), the store's method runs on them, and the snapshot is written
  back by a script that checks the lock is still this worker's token (a holder that stalled past
  ``BUDGET_LOCK_TTL`` has its write refused and its call retried) and releases it.

So each read-modify-write is atomic across every worker of every machine, and the semantics are
the store's by construction, not a second implementation. Tickets belong to a cluster-wide
process id (:func:`~scraper.redis.connection.process_id`); a ticket's process is alive
while its ``{p}:proc:{id}`` key is (heartbeats), which replaces the local ``kill(pid, 0)``.
ETags are not budget state: :mod:`scraper.budget.redisetags` keeps them. While Redis is away
a call raises :class:`~scraper.redis.connection.RedisUnavailable` and the budget
middleware waits (:mod:`scraper.stores.base`'s outage contract).

Anonymous budgets are per IP address at GitHub; here they are one budget for the cluster —
conservative (never over any machine's limit), so give the cluster a token.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from scrapy.crawler import Crawler

from scraper.budget.store import SCHEMA, BudgetStore, BudgetTiming, read_buckets
from scraper.redis import defaults
from scraper.redis.connection import RedisLink, RedisOutage, RedisUnavailable, get_link, process_id
from scraper.redis.keys import Keys

SKIPPED_TABLES = frozenset({"meta"})
"""Not in the snapshot: ``meta`` is the local file's label."""

SAVE = """
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('DEL', KEYS[2])
return 1
"""

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

LOCK_WAIT = 10.0
LOCK_SPIN = 0.002


class BudgetLockLost(RedisUnavailable):
    """The lock lapsed before the write: nothing was written; the call is made again."""


def dump_tables(conn: sqlite3.Connection) -> str:
    tables = {}
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        if name in SKIPPED_TABLES:
            continue
        cursor = conn.execute(f'SELECT * FROM "{name}"')
        tables[name] = {"columns": [d[0] for d in cursor.description], "rows": cursor.fetchall()}
    return json.dumps(tables, separators=(",", ":"))


def restore_tables(conn: sqlite3.Connection, raw: bytes | str | None) -> None:
    """Replace the in-memory tables with a snapshot (columns matched by name)."""
    data = json.loads(raw) if raw else {}
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        if name in SKIPPED_TABLES:
            continue
        conn.execute(f'DELETE FROM "{name}"')
        table = data.get(name)
        if not table:
            continue
        have = {row[1] for row in conn.execute(f'PRAGMA table_info("{name}")')}
        picks = [i for i, column in enumerate(table["columns"]) if column in have]
        if not picks:
            continue
        columns = ", ".join(f'"{table["columns"][i]}"' for i in picks)
        marks = ", ".join("?" for _ in picks)
        conn.executemany(f'INSERT INTO "{name}" ({columns}) VALUES ({marks})',
                         [[row[i] for i in picks] for row in table["rows"]])


def read_redis_buckets(client: Any, keys: Keys) -> list[dict[str, Any]]:
    """Every bucket with its tickets waiting / in flight, as the SQLite store reports them."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(SCHEMA)
        restore_tables(conn, client.get(keys.budget_state))
        return read_buckets(conn)
    finally:
        conn.close()


class RedisBudgetStore(RedisOutage, BudgetStore):
    def __init__(self, link: RedisLink, keys: Keys, timing: BudgetTiming, **kwargs: Any) -> None:
        self.link = link
        self.keys = keys
        kwargs.setdefault("pid", process_id())
        kwargs.setdefault("alive", self._alive)
        # The store's own set-up, on an in-memory database: the working copy of the tables.
        super().__init__(Path(":memory:"), timing, **kwargs)
        self._save_script = link.client.register_script(SAVE)
        self._release_script = link.client.register_script(RELEASE)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisBudgetStore:
        settings = crawler.settings
        return cls(get_link(settings["REDIS_URL"]), Keys.from_settings(settings),
                   BudgetTiming.from_settings(settings))

    def _alive(self, pid: int) -> bool:
        return bool(self.link.client.exists(self.keys.proc(pid)))

    def _acquire(self) -> str:
        token = secrets.token_hex(8)
        ttl_ms = int(defaults.BUDGET_LOCK_TTL * 1000)
        deadline = time.monotonic() + LOCK_WAIT
        while not self.link.client.set(self.keys.budget_lock, token, nx=True, px=ttl_ms):
            if time.monotonic() > deadline:
                raise BudgetLockLost("the GitHub budget's lock stayed taken")
            time.sleep(LOCK_SPIN)  # a transaction is a few round trips: worth a short spin
        return token

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        token = self._acquire()
        saved = False
        try:
            restore_tables(self._conn, self.link.client.get(self.keys.budget_state))
            with super()._tx() as conn:  # the machine store's transaction, on the working copy
                yield conn
            saved = bool(self._save_script(keys=[self.keys.budget_state, self.keys.budget_lock],
                                           args=[token, dump_tables(self._conn)]))
            if not saved:
                raise BudgetLockLost("the GitHub budget's lock lapsed during a transaction")
        finally:
            if not saved:
                with contextlib.suppress(RedisUnavailable):  # else it lapses on its own
                    self._release_script(keys=[self.keys.budget_lock], args=[token])

    def buckets(self) -> list[dict[str, Any]]:
        return read_redis_buckets(self.link.client, self.keys)
