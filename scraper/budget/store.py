"""The shared budget: one paced token bucket per (identity, resource), in one SQLite file.

Every worker process on the machine opens ``{data_dir}/state/budget.sqlite`` and does each
read-modify-write in a ``BEGIN IMMEDIATE`` transaction, so the processes act as one client, and
the state outlives any worker or runner restart.

A request goes through two steps, *book* then *claim*:

* :meth:`BudgetStore.reserve` books the next free slot: no earlier than the previous booking plus
  the pace interval (``window / limit``, shortened to spread what is left of a known window over
  the time left), no earlier than a pause's end, and never more bookings in a window than it has
  requests left. Windows after the known one are projected (GitHub starts a window at the first
  request after a reset and rounds its reset up to a whole second, hence :data:`RESET_ROUNDING`).
* :meth:`BudgetStore.claim` runs when the slot comes. Bookings are only a plan, made before newer
  answers arrived, so the claim checks again against the truth now: no pause, and
  ``remaining`` minus the requests already sent and not yet answered is at least one. If not,
  the ticket is booked again, later. A claimed ticket counts as in flight until its answer.

Answers sync the bucket (:meth:`complete`, :meth:`limited`): ``x-ratelimit-remaining/reset``
are the truth; configured limits are only the first guess until the first answer, or until a
``/rate_limit`` probe (free on GitHub) when the state is unknown or older than a window.

Buckets without a limit (``BucketSpec.limit is None``) are pace-only: one request per
``window`` seconds, pauses still shared. The trending pages use one.

An API without ``/rate_limit`` (a GitHub Enterprise Server with rate limiting off answers it 404;
a proxy may answer a page that is not JSON) has no limit to guess: its buckets keep none
(:data:`NO_LIMIT`, paced by ``min_interval`` only, pauses still shared) until an answer's
``x-ratelimit-*`` headers give one, from which on they are the truth as anywhere.
"""

from __future__ import annotations

import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scraper.budget.limits import MAX_WAIT, PauseDecision, RateHeaders, pause_for
from scraper.stores.base import Outage
from scraper.stores.sqlite import open_store, transaction
from scraper.utils.pidlock import pid_alive

if TYPE_CHECKING:  # the runner's status and catalog read budgets without Scrapy
    from scrapy.settings import BaseSettings
from typing import TYPE_CHECKING, Protocol

KIND = "budget"
VERSION = 2
SCHEMA = """
CREATE TABLE IF NOT EXISTS buckets (
    identity TEXT NOT NULL,          -- sha256 of the token, 'anonymous', or a web host
    resource TEXT NOT NULL,          -- core, search, web
    capped INTEGER NOT NULL,         -- 1: a counted budget (API); 0: a pace only (web)
    limit_n INTEGER,                 -- requests per window: headers once seen, else the guess
    window_s REAL NOT NULL,          -- window length (or the pace interval when not capped)
    probe INTEGER NOT NULL DEFAULT 0,-- 1: state can be read for free from GET /rate_limit
    source TEXT,                     -- 'headers', 'guess', 'probe', or 'none' (no limit known)
    remaining INTEGER,
    reset_at REAL,                   -- epoch seconds
    synced_at REAL,                  -- last time headers (or a probe) told the truth
    probed_at REAL,
    probe_until REAL NOT NULL DEFAULT 0,
    last_sent_at REAL NOT NULL DEFAULT 0,
    pause_until REAL NOT NULL DEFAULT 0,
    pause_set_at REAL NOT NULL DEFAULT 0,
    pause_reason TEXT,
    backoff_s REAL NOT NULL DEFAULT 0,-- the doubling minute; 0 again after a success
    PRIMARY KEY (identity, resource)
);
CREATE TABLE IF NOT EXISTS tickets (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    identity TEXT NOT NULL,
    resource TEXT NOT NULL,
    pid INTEGER NOT NULL,
    slot_at REAL NOT NULL,
    sent_at REAL                      -- NULL: booked, waiting; else sent, not yet answered
);
CREATE INDEX IF NOT EXISTS tickets_by_bucket ON tickets (identity, resource, slot_at);
CREATE TABLE IF NOT EXISTS windows (
    identity TEXT NOT NULL,
    resource TEXT NOT NULL,
    last_reset REAL NOT NULL,         -- the newest x-ratelimit-reset the headers gave
    learned_s REAL,                   -- the shortest jump of that reset between windows
    PRIMARY KEY (identity, resource)
);
"""

NO_LIMIT = "none"
"""A bucket's ``source`` when the API has no rate-limit endpoint and no answer has given headers:
the configured first guess is not GitHub's, so nothing is held back by it."""
RESET_ROUNDING = 1.0
"""GitHub's reset is whole epoch seconds, rounded up: a window can last up to a second longer
than its nominal length, so projected windows are this much longer."""
SENT_LEASE = 300.0
"""A sent ticket unanswered for this long belongs to a request that is gone (a worker killed
without running its close): it stops counting as in flight."""
PROBE_LEASE = 15.0
"""One worker probes ``/rate_limit`` for everyone; if it has not reported by then, another may."""
PROBE_POLL = 0.25
CLEANUP_INTERVAL = 2.0


@dataclass(frozen=True, slots=True)
class BucketKey:
    identity: str
    resource: str


@dataclass(frozen=True, slots=True)
class BucketSpec:
    """The first guess for a bucket: ``limit`` per ``window`` seconds; no limit = pace only."""

    limit: int | None
    window: float
    probe: bool = False


@dataclass(slots=True)
class Ticket:
    id: int
    key: BucketKey
    slot_at: float
    sent_at: float | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    go: bool
    slot_at: float  # when not go: when to claim again
    probe: bool = False  # when set: read /rate_limit, report with probe_result(), claim again


@dataclass(frozen=True, slots=True)
class PauseResult:
    until: float
    reason: str
    new: bool  # True for the one answer that started the pause: the one to log


@dataclass(slots=True)
class _Bucket:
    identity: str
    resource: str
    capped: int
    limit_n: int | None
    window_s: float
    probe: int
    source: str | None
    remaining: int | None
    reset_at: float | None
    synced_at: float | None
    probed_at: float | None
    probe_until: float
    last_sent_at: float
    pause_until: float
    pause_set_at: float
    pause_reason: str | None
    backoff_s: float

    @property
    def key(self) -> BucketKey:
        return BucketKey(self.identity, self.resource)

    @property
    def unlimited(self) -> bool:
        return self.source == NO_LIMIT

    @property
    def nominal_interval(self) -> float:
        if not self.capped or not self.limit_n:
            return self.window_s
        return self.window_s / self.limit_n


_COLUMNS = tuple(f.name for f in fields(_Bucket))


@dataclass(frozen=True, slots=True)
class BudgetTiming:
    """The budget's timings, from the ``BUDGET_*`` settings (defaults in scraper/settings.py)."""

    reset_guard: float
    min_interval: float
    backoff_start: float
    backoff_max: float
    max_wait: float = MAX_WAIT

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> BudgetTiming:
        return cls(reset_guard=settings.getfloat("BUDGET_RESET_GUARD"),
                   min_interval=settings.getfloat("BUDGET_MIN_INTERVAL"),
                   backoff_start=settings.getfloat("BUDGET_BACKOFF_START"),
                   backoff_max=settings.getfloat("BUDGET_BACKOFF_MAX"),
                   max_wait=settings.getfloat("BUDGET_MAX_WAIT"))


class BudgetStore:
    """The machine-wide budget. One instance per process; every method is one transaction."""

    def __init__(self, path: Path, timing: BudgetTiming, *,
                 clock: Callable[[], float] = time.time, pid: int | None = None,
                 alive: Callable[[int], bool] = pid_alive,
                 wall: Callable[[], float] | None = None) -> None:
        """``clock`` paces (a steady clock: :func:`scraper.budget.clock.steady_clock`);
        ``wall`` is the wall clock, read only to measure how far away an answer's
        ``x-ratelimit-reset`` is (by default the same clock)."""
        self.path = path
        self.wall = wall or clock
        self.reset_guard = timing.reset_guard
        self.min_interval = timing.min_interval
        self.backoff_start = timing.backoff_start
        self.backoff_max = timing.backoff_max
        self.max_wait = timing.max_wait
        self.clock = clock
        self.pid = os.getpid() if pid is None else pid
        self.alive = alive
        self._specs: dict[BucketKey, BucketSpec] = {}
        self._cleaned_at = -math.inf
        self._conn = open_store(path, KIND, VERSION, SCHEMA)

    def close(self) -> None:
        self._conn.close()

    # --- transactions and rows ----------------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with transaction(self._conn) as conn:
            yield conn

    def define(self, key: BucketKey, spec: BucketSpec) -> None:
        """Register the first guess for ``key``; the bucket row is made on first use."""
        self._specs[key] = spec

    def _spec(self, key: BucketKey) -> BucketSpec:
        spec = self._specs.get(key)
        if spec is None:  # a resource only seen in headers: assume GitHub's hourly windows
            spec = BucketSpec(None, 1.0) if key.resource == "web" else BucketSpec(5000, 3600.0)
        return spec

    def _load(self, key: BucketKey) -> _Bucket:
        row = self._conn.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM buckets WHERE identity = ? AND resource = ?",
            (key.identity, key.resource)).fetchone()
        spec = self._spec(key)
        if row is None:
            bucket = _Bucket(key.identity, key.resource, int(spec.limit is not None), spec.limit,
                             spec.window, int(spec.probe), None, None, None, None, None, 0.0,
                             0.0, 0.0, 0.0, None, 0.0)
            placeholders = ", ".join("?" for _ in _COLUMNS)
            self._conn.execute(f"INSERT INTO buckets ({', '.join(_COLUMNS)}) "
                               f"VALUES ({placeholders})", self._values(bucket))
            return bucket
        bucket = _Bucket(*row)
        if key in self._specs:
            # No header names the window's length: the configuration's guess, unless the headers
            # have shown a shorter one (a GitHub Enterprise Server, a test server).
            bucket.window_s = min(spec.window, self._learned_window(key) or math.inf)
            bucket.probe = int(spec.probe)
            if bucket.source != "headers" and spec.limit is not None:
                bucket.limit_n = spec.limit
        self._sane(bucket, self.clock())
        return bucket

    def _sane(self, bucket: _Bucket, now: float) -> None:
        """Times no answer can set, left by an earlier version or a clock that stepped: a reset
        or pause past ``max_wait`` is clamped to it (a reset so far is no window: guessed
        again), a send in the future is now."""
        if bucket.reset_at is not None and bucket.reset_at > now + self.max_wait:
            bucket.reset_at, bucket.remaining, bucket.source = None, None, "guess"
        bucket.pause_until = min(bucket.pause_until, now + self.max_wait)
        bucket.probe_until = min(bucket.probe_until, now + self.max_wait)
        bucket.last_sent_at = min(bucket.last_sent_at, now)

    @staticmethod
    def _values(bucket: _Bucket) -> tuple[Any, ...]:
        return tuple(getattr(bucket, name) for name in _COLUMNS)

    def _save(self, bucket: _Bucket) -> None:
        sets = ", ".join(f"{name} = ?" for name in _COLUMNS[2:])
        self._conn.execute(
            f"UPDATE buckets SET {sets} WHERE identity = ? AND resource = ?",
            (*self._values(bucket)[2:], bucket.identity, bucket.resource))

    def _count(self, key: BucketKey, where: str, *args: Any) -> int:
        return self._conn.execute(
            f"SELECT COUNT(*) FROM tickets WHERE identity = ? AND resource = ? AND {where}",
            (key.identity, key.resource, *args)).fetchone()[0]

    # --- housekeeping ---------------------------------------------------------------------------

    def _cleanup(self, now: float) -> None:
        """Forget tickets of processes that are gone: their slots must not block the others."""
        if now - self._cleaned_at < CLEANUP_INTERVAL:
            return
        self._cleaned_at = now
        pids = [row[0] for row in self._conn.execute(
            "SELECT DISTINCT pid FROM tickets WHERE pid != ?", (self.pid,))]
        dead = [pid for pid in pids if not self.alive(pid)]
        for pid in dead:
            self._drop_tickets("pid = ?", pid, now=now)
        self._drop_tickets("sent_at IS NOT NULL AND sent_at < ?", now - SENT_LEASE, now=now)

    def _drop_tickets(self, where: str, *args: Any, now: float) -> None:
        # A request sent but never answered may have been counted by GitHub: assume it was.
        lost = self._conn.execute(
            f"SELECT identity, resource, COUNT(*) FROM tickets WHERE sent_at IS NOT NULL "
            f"AND {where} GROUP BY identity, resource", args).fetchall()
        for identity, resource, n in lost:
            self._conn.execute(
                "UPDATE buckets SET remaining = MAX(0, remaining - ?) WHERE identity = ? AND "
                "resource = ? AND capped = 1 AND remaining IS NOT NULL AND reset_at > ?",
                (n, identity, resource, now))
        self._conn.execute(f"DELETE FROM tickets WHERE {where}", args)

    def release_process(self) -> None:
        """Drop this process's tickets (at spider close): its waiting requests are gone."""
        with self._tx():
            self._drop_tickets("pid = ?", self.pid, now=self.clock())

    # --- booking ----------------------------------------------------------------------------------

    def reserve(self, key: BucketKey) -> Ticket:
        """Book the next free slot for one request; wait until ``ticket.slot_at``, then claim."""
        with self._tx():
            now = self.clock()
            self._cleanup(now)
            bucket = self._load(key)
            slot = self._plan(bucket, now, now, exclude=None)
            cursor = self._conn.execute(
                "INSERT INTO tickets (identity, resource, pid, slot_at) VALUES (?, ?, ?, ?)",
                (key.identity, key.resource, self.pid, slot))
            self._save(bucket)
            return Ticket(int(cursor.lastrowid or 0), key, slot)

    def _interval(self, bucket: _Bucket, now: float, exclude: int | None) -> float:
        if bucket.unlimited:
            return self.min_interval
        nominal = bucket.nominal_interval
        if not bucket.capped or bucket.reset_at is None or bucket.remaining is None:
            return nominal
        if now >= bucket.reset_at:
            return nominal
        # Spread what is left of a known window over the time left (catches up after idle time
        # or 304s), never faster than min_interval.
        left = bucket.remaining - self._count(bucket.key, "slot_at < ? AND id IS NOT ?",
                                              bucket.reset_at, exclude)
        if left <= 0:
            return nominal
        return max(self.min_interval, min(nominal, (bucket.reset_at - now) / left))

    def _plan(self, bucket: _Bucket, now: float, not_before: float, exclude: int | None) -> float:
        interval = self._interval(bucket, now, exclude)
        last_booked = self._conn.execute(
            "SELECT MAX(slot_at) FROM tickets WHERE identity = ? AND resource = ? AND "
            "sent_at IS NULL AND id IS NOT ?",
            (bucket.identity, bucket.resource, exclude)).fetchone()[0]
        slot = max(now, not_before, bucket.pause_until)
        if bucket.last_sent_at:
            slot = max(slot, bucket.last_sent_at + interval)
        if last_booked is not None:
            slot = max(slot, last_booked + interval)
        if not bucket.capped or bucket.unlimited:
            return slot
        window = bucket.window_s + RESET_ROUNDING
        if bucket.reset_at is None or (now >= bucket.reset_at and not self._count(
                bucket.key, "slot_at >= ? AND id IS NOT ?", bucket.reset_at, exclude)):
            # The known window is over and nothing is planned past it: the next window starts
            # with this request. (A window still running is never replaced by a guess: slots
            # past its reset fall in the projected windows below.)
            self._guess_window(bucket, slot)
        assert bucket.reset_at is not None and bucket.remaining is not None
        for _ in range(100_000):
            if slot < bucket.reset_at:
                start, end, capacity = -math.inf, bucket.reset_at, bucket.remaining
            else:
                k = math.floor((slot - bucket.reset_at) / window)
                start = bucket.reset_at + k * window
                end, capacity = start + window, bucket.limit_n or 1
            used = self._count(bucket.key, "slot_at >= ? AND slot_at < ? AND id IS NOT ?",
                               start, end, exclude)
            if used < capacity:
                return slot
            slot = max(slot, end + self.reset_guard)
        return slot  # unreachable in practice: more than 100,000 windows booked ahead

    def _guess_window(self, bucket: _Bucket, start: float) -> None:
        bucket.reset_at = start + bucket.window_s + RESET_ROUNDING
        bucket.remaining = bucket.limit_n or 1
        bucket.source = "guess"

    # --- claiming ---------------------------------------------------------------------------------

    def claim(self, ticket: Ticket) -> Claim:
        """At the slot: go (the ticket is now in flight), or come back at ``slot_at``."""
        with self._tx():
            now = self.clock()
            self._cleanup(now)
            bucket = self._load(ticket.key)
            exists = self._count(ticket.key, "id = ?", ticket.id)
            if not exists:  # dropped as stale (this process looked dead): book again
                return self._rebook(ticket, bucket, now, now, insert=True)
            if bucket.pause_until > now:
                return self._rebook(ticket, bucket, now, bucket.pause_until)
            spacing = bucket.nominal_interval if not bucket.capped else self.min_interval
            if bucket.last_sent_at and now < bucket.last_sent_at + spacing:
                return self._hold(ticket, bucket.last_sent_at + spacing)
            if bucket.capped and not bucket.unlimited:
                if bucket.probe and self._needs_probe(bucket, now):
                    if bucket.probe_until > now:  # another worker is asking; wait for it
                        return self._hold(ticket, min(bucket.probe_until, now + PROBE_POLL))
                    bucket.probe_until = now + PROBE_LEASE
                    self._save(bucket)
                    return Claim(go=False, slot_at=now, probe=True)
                if bucket.reset_at is not None and now >= bucket.reset_at:
                    if now < bucket.reset_at + self.reset_guard:
                        # Booked before this reset was known: the new window's first request
                        # waits out the guard too, in its place.
                        return self._hold(ticket, bucket.reset_at + self.reset_guard)
                    self._guess_window(bucket, now)  # a new window starts with this request
                elif bucket.reset_at is None:
                    self._guess_window(bucket, now)
                assert bucket.remaining is not None and bucket.reset_at is not None
                in_flight = self._count(ticket.key, "sent_at IS NOT NULL")
                if bucket.remaining - in_flight < 1:
                    return self._rebook(ticket, bucket, now, bucket.reset_at + self.reset_guard)
            self._conn.execute("UPDATE tickets SET sent_at = ? WHERE id = ?", (now, ticket.id))
            bucket.last_sent_at = now
            self._save(bucket)
            ticket.sent_at = now
            return Claim(go=True, slot_at=now)

    def _needs_probe(self, bucket: _Bucket, now: float) -> bool:
        """Nothing heard for a window past the last known reset (the state is unknown: someone
        else may have spent the budget meanwhile), and no probe tried within a window."""
        heard = max(bucket.synced_at or -math.inf, bucket.reset_at or -math.inf)
        stale = bucket.synced_at is None or now - heard > bucket.window_s
        return stale and not self._probed_lately(bucket, now)

    @staticmethod
    def _probed_lately(bucket: _Bucket, now: float) -> bool:
        return bucket.probed_at is not None and now - bucket.probed_at <= bucket.window_s

    def _hold(self, ticket: Ticket, until: float) -> Claim:
        self._conn.execute("UPDATE tickets SET slot_at = ? WHERE id = ?", (until, ticket.id))
        ticket.slot_at = until
        return Claim(go=False, slot_at=until)

    def _rebook(self, ticket: Ticket, bucket: _Bucket, now: float, not_before: float,
                insert: bool = False) -> Claim:
        slot = self._plan(bucket, now, not_before, exclude=ticket.id)
        if insert:
            cursor = self._conn.execute(
                "INSERT INTO tickets (identity, resource, pid, slot_at) VALUES (?, ?, ?, ?)",
                (ticket.key.identity, ticket.key.resource, self.pid, slot))
            ticket.id = int(cursor.lastrowid or 0)
        else:
            self._conn.execute("UPDATE tickets SET slot_at = ? WHERE id = ?", (slot, ticket.id))
        self._save(bucket)
        ticket.slot_at = slot
        return Claim(go=False, slot_at=slot)

    def cancel(self, ticket: Ticket) -> None:
        """The request will not be sent after all (spider closing): free its slot."""
        with self._tx():
            self._drop_tickets("id = ?", ticket.id, now=self.clock())

    # --- answers ----------------------------------------------------------------------------------

    def _impossible(self, rate: RateHeaders) -> bool:
        """A reset farther away than any window GitHub has (an hour, ``max_wait``): the answer
        that gave it is not believed, its count neither."""
        reset_in = rate.reset_in(self.wall())
        return reset_in is not None and reset_in > self.max_wait

    def _local(self, rate: RateHeaders, now: float) -> RateHeaders:
        """``rate`` with its reset on this store's clock, at most ``max_wait`` away."""
        reset_in = rate.reset_in(self.wall())
        if reset_in is None:
            return rate
        return replace(rate, reset=now + min(reset_in, self.max_wait))

    def _sync(self, bucket: _Bucket, raw: RateHeaders, now: float, *,
              counted: bool = False) -> None:
        """``counted``: the answer to a request GitHub counted, so its reset is the end of a
        window that request opened or ran in. Any other answer (a 304, ``/rate_limit``, a limit
        answer) between windows gives "a window from now", a reset that moves with the clock:
        it is the truth for now, but no window length can be learned from it."""
        if not raw.complete:
            return
        if self._impossible(raw):
            # The state is unknown again: the next claim asks /rate_limit (free), which tells
            # the truth at once, rather than waiting out a reset no window has.
            bucket.remaining, bucket.reset_at, bucket.synced_at = None, None, None
            bucket.source = "guess"
            return
        rate = self._local(raw, now)
        assert raw.reset is not None and rate.reset is not None and rate.remaining is not None
        if rate.reset <= now:
            return  # about a window already over: says nothing about the current one
        if rate.limit:
            bucket.limit_n = rate.limit
        same_window = (bucket.source == "headers" and bucket.reset_at is not None
                       and abs(rate.reset - bucket.reset_at) <= 0.5)
        if same_window:
            # Answers arrive out of order: within a window, the lowest remaining is the newest.
            bucket.remaining = min(bucket.remaining or 0, rate.remaining)
        elif (bucket.source != "headers" or bucket.reset_at is None
              or rate.reset > bucket.reset_at):
            if counted and rate.reset < now + self.max_wait:  # clamped: says nothing of it
                self._learn_window(bucket, raw.reset)
            bucket.remaining, bucket.reset_at = rate.remaining, rate.reset
        else:
            return  # a late answer from an older window
        bucket.source = "headers"
        bucket.synced_at = now

    def _learned_window(self, key: BucketKey) -> float | None:
        row = self._conn.execute("SELECT learned_s FROM windows WHERE identity = ? AND "
                                 "resource = ?", (key.identity, key.resource)).fetchone()
        return row[0] if row else None

    def _learn_window(self, bucket: _Bucket, reset: float) -> None:
        """The headers gave a window ending at ``reset``. A window starts at the first request
        after the previous reset, so the jump from the previous header reset is never shorter
        than the window (whole seconds, rounded up: at most a second longer), and the shortest
        jump seen is the window's length wherever requests keep coming. Projected (guessed)
        windows in between do not count: only resets the headers gave."""
        if not bucket.capped:
            return
        row = self._conn.execute("SELECT last_reset, learned_s FROM windows WHERE identity = ? "
                                 "AND resource = ?", (bucket.identity, bucket.resource)).fetchone()
        if row is None:
            self._conn.execute("INSERT INTO windows VALUES (?, ?, ?, NULL)",
                               (bucket.identity, bucket.resource, reset))
            return
        last_reset, learned = row
        if reset <= last_reset + 0.5 and last_reset <= reset + self.max_wait:
            return  # the same window (answers out of order), or an older one
        jump = reset - last_reset
        if jump >= 1.0 and jump < (learned or math.inf):
            learned = jump
        self._conn.execute("UPDATE windows SET last_reset = ?, learned_s = ? WHERE identity = ? "
                           "AND resource = ?", (reset, learned, bucket.identity, bucket.resource))
        if learned is not None and learned < bucket.window_s:
            bucket.window_s = learned
            self._replan_waiting(bucket, self.clock())

    def _replan_waiting(self, bucket: _Bucket, now: float) -> None:
        """Book every waiting ticket again, in order, at the pace of a window just learned:
        they were spaced for the longer guess (their processes see it in :meth:`slot_of`)."""
        waiting = self._conn.execute(
            "SELECT id, pid FROM tickets WHERE identity = ? AND resource = ? AND sent_at IS NULL "
            "ORDER BY slot_at", (bucket.identity, bucket.resource)).fetchall()
        self._conn.execute("DELETE FROM tickets WHERE identity = ? AND resource = ? AND "
                           "sent_at IS NULL", (bucket.identity, bucket.resource))
        for ticket_id, pid in waiting:
            self._conn.execute("INSERT INTO tickets (id, identity, resource, pid, slot_at) "
                               "VALUES (?, ?, ?, ?, ?)", (ticket_id, bucket.identity,
                                                          bucket.resource, pid,
                                                          self._plan(bucket, now, now, None)))

    def slot_of(self, ticket: Ticket) -> float:
        """The ticket's slot as booked now: re-booking may have moved it."""
        row = self._conn.execute("SELECT slot_at FROM tickets WHERE id = ?",
                                 (ticket.id,)).fetchone()
        return row[0] if row else ticket.slot_at

    def complete(self, ticket: Ticket | None, key: BucketKey, rate: RateHeaders, *,
                 counted: bool = True, success: bool = True) -> None:
        """An answer (or a failure) for ``ticket``'s request; ``key`` is the bucket its headers
        name (normally the ticket's). ``counted=False`` for a 304, which costs nothing."""
        with self._tx():
            now = self.clock()
            if ticket is not None:
                self._conn.execute("DELETE FROM tickets WHERE id = ?", (ticket.id,))
            bucket = self._load(key)
            if rate.complete:
                self._sync(bucket, rate, now, counted=counted)
            elif counted and bucket.capped and bucket.remaining is not None and (
                    bucket.reset_at or 0) > now:
                bucket.remaining = max(0, bucket.remaining - 1)  # no headers: assume it cost one
            if success:
                bucket.backoff_s = 0.0
            self._save(bucket)

    def limited(self, ticket: Ticket | None, key: BucketKey, rate: RateHeaders, kind: str,
                retry_after: float | None) -> PauseResult:
        """A rate-limit answer: pause ``key`` for every worker, in GitHub's order."""
        with self._tx():
            now = self.clock()
            sent_at = now
            if ticket is not None:
                sent_at = ticket.sent_at or now
                self._conn.execute("DELETE FROM tickets WHERE id = ?", (ticket.id,))
            bucket = self._load(key)
            impossible = self._impossible(rate)
            self._sync(bucket, rate, now)
            rate = self._local(rate, now)
            # A pause set while this request was in flight is the same episode: another
            # worker's answer already started it (and logged it); don't double again.
            known = bucket.pause_set_at >= sent_at and bucket.pause_until > now
            if known and retry_after is None and rate.remaining != 0:
                decision = PauseDecision(bucket.pause_until, bucket.pause_reason or "", 0.0)
            elif impossible and retry_after is None and bucket.probe and not bucket.backoff_s:
                # No wait on a reset no window has: the retry's claim asks /rate_limit (free)
                # first, and waits as long as that says. Once per episode: another such answer
                # before a success backs off, doubling, as a limit answer without a reset does.
                decision = PauseDecision(now, f"{kind} rate limit with a reset no window has: "
                                              "not paused; /rate_limit asked first",
                                         self.backoff_start / 2)
                bucket.pause_reason = decision.why
                bucket.probed_at = None
            else:
                if impossible:
                    rate = replace(rate, reset=None)
                decision = pause_for(now, kind, rate, retry_after, bucket.backoff_s,
                                     reset_guard=self.reset_guard,
                                     backoff_start=self.backoff_start,
                                     backoff_max=self.backoff_max, max_wait=self.max_wait)
            if decision.doubling:
                bucket.backoff_s = decision.doubling
            if decision.until > bucket.pause_until:
                bucket.pause_until = decision.until
                bucket.pause_reason = decision.why
            if not known:
                bucket.pause_set_at = now
            self._save(bucket)
            return PauseResult(bucket.pause_until, bucket.pause_reason or "", not known)

    # --- the /rate_limit probe ----------------------------------------------------------------

    def probe_result(self, identity: str, resources: dict[str, RateHeaders] | None, *,
                     no_api: bool = False) -> None:
        """What ``GET /rate_limit`` said for ``identity`` (None: the probe failed; ``no_api``:
        the API has no such endpoint, see :data:`NO_LIMIT`)."""
        with self._tx():
            now = self.clock()
            for key in [k for k in self._specs if k.identity == identity]:
                bucket = self._load(key)
                if not bucket.capped:
                    continue
                rate = (resources or {}).get(key.resource)
                if no_api and bucket.source != "headers":
                    bucket.source, bucket.remaining, bucket.reset_at = NO_LIMIT, None, None
                    self._replan_waiting(bucket, now)
                elif rate is not None:
                    # The probe is the truth now, whatever was guessed or stored before; the
                    # requests booked meanwhile were booked on the guess: book them again on it.
                    bucket.source = "probe"
                    self._sync(bucket, rate, now)
                    self._replan_waiting(bucket, now)
                bucket.probed_at = now
                bucket.probe_until = 0.0
                self._save(bucket)

    # --- reading ----------------------------------------------------------------------------------

    def buckets(self) -> list[dict[str, Any]]:
        """Every bucket's row, with its tickets waiting and in flight (for status)."""
        return read_buckets(self._conn)


def read_buckets(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    rows = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM buckets "
                        "ORDER BY resource, identity").fetchall()
    counts = {(identity, resource, sent): n for identity, resource, sent, n in conn.execute(
        "SELECT identity, resource, sent_at IS NOT NULL, COUNT(*) FROM tickets "
        "GROUP BY identity, resource, sent_at IS NOT NULL")}
    out = []
    for row in rows:
        record = dict(zip(_COLUMNS, row, strict=True))
        record["waiting"] = counts.get((record["identity"], record["resource"], 0), 0)
        record["in_flight"] = counts.get((record["identity"], record["resource"], 1), 0)
        out.append(record)
    return out


class BudgetStorage(Outage, Protocol):
    """The GitHub budget as the middleware uses it: :class:`BudgetStore`'s methods, whichever
    backend keeps its rows (``BUDGET_STORAGE``)."""

    clock: Callable[[], float]
    max_wait: float

    def define(self, key: BucketKey, spec: BucketSpec) -> None: ...

    def reserve(self, key: BucketKey) -> Ticket: ...

    def claim(self, ticket: Ticket) -> Claim: ...

    def cancel(self, ticket: Ticket) -> None: ...

    def slot_of(self, ticket: Ticket) -> float: ...

    def complete(self, ticket: Ticket | None, key: BucketKey, rate: RateHeaders, *,
                 counted: bool = True, success: bool = True) -> None: ...

    def limited(self, ticket: Ticket | None, key: BucketKey, rate: RateHeaders, kind: str,
                retry_after: float | None) -> PauseResult: ...

    def probe_result(self, identity: str, resources: dict[str, RateHeaders] | None, *,
                     no_api: bool = False) -> None: ...

    def buckets(self) -> list[dict[str, Any]]: ...

    def release_process(self) -> None: ...

    def close(self) -> None: ...
