"""The connection: one Redis client per process, built from ``REDIS_URL``, that knows when Redis
is gone.

Every command of the process — ours and scrapy-redis's (its scheduler, dupefilter and spider
mixin get this very client through ``REDIS_PARAMS["redis_cls"]``) — passes one circuit breaker,
:class:`RedisLink`:

* the first failure (refused, reset, timed out) logs ONE warning line and opens the circuit;
* while it is open, commands fail at once with :class:`RedisUnavailable` (no socket is touched,
  so a worker's reactor is never blocked by a dead Redis), and callers pause: async code awaits
  :meth:`RedisLink.wait_until_up`, the scheduler hands out no request, writes wait in the
  write-behind queue;
* a probe (``PING``) is let through after a backoff that doubles from ``BACKOFF_START`` to
  ``BACKOFF_MAX``; the first success closes the circuit and everything resumes.

redis-py's own retries are cut to one reconnect (a pooled connection broken by a Redis restart
is re-dialled once, silently): its default of ten retries with backoff would block the reactor.
"""

from __future__ import annotations

import logging
import os
import random
import re
import socket
import time
from collections.abc import Callable
from typing import Any, cast

import redis
from redis.backoff import NoBackoff
from redis.client import Pipeline
from redis.retry import Retry

from scraper.redis import defaults
from scraper.redis.keys import PROBE_KEY
from scraper.stores.base import StoreUnavailable
from scraper.utils.urlmask import mask_url

logger = logging.getLogger("scraper.cluster")

_CONNECTION_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)


class RedisUnavailable(redis.exceptions.ConnectionError, StoreUnavailable):
    """Redis cannot be reached right now; try again after :meth:`RedisLink.wait_until_up`."""


REFUSAL_CODES = ("MISCONF", "NOREPLICAS", "BUSY", "LOADING")
_PIPELINE_PREFIX = re.compile(r"^Command # \d+ \(.*?\) of pipeline caused error: ", re.S)


def as_text(reply: bytes | str) -> str:
    """A reply as text: the client answers bytes (it runs without ``decode_responses``)."""
    return reply.decode() if isinstance(reply, bytes) else reply


def is_refusal(exc: BaseException) -> bool:
    """Redis answered but takes no writes now: out of memory (``noeviction``), a replica after
    a failover (READONLY), a failed snapshot (MISCONF), too few replicas, loading, a busy
    script. That is an outage like a lost connection, not a bad command."""
    if isinstance(exc, (redis.exceptions.OutOfMemoryError, redis.exceptions.ReadOnlyError)):
        return True
    if not isinstance(exc, redis.exceptions.ResponseError):
        return False
    return _PIPELINE_PREFIX.sub("", str(exc)).startswith(REFUSAL_CODES)


class RedisLink:
    """The process's client and circuit breaker (see the module docstring)."""

    def __init__(self, url: str, *, socket_timeout: float = defaults.SOCKET_TIMEOUT,
                 connect_timeout: float = defaults.CONNECT_TIMEOUT,
                 backoff_start: float = defaults.BACKOFF_START,
                 backoff_max: float = defaults.BACKOFF_MAX) -> None:
        self.url = url
        self.label = mask_url(url)
        self.backoff_start = backoff_start
        self.backoff_max = backoff_max
        self.pid = os.getpid()
        self.down_since: float | None = None  # wall clock, for status
        self.last_error: str | None = None
        self.outages = 0
        self.down_seconds = 0.0
        self.refusing = False  # down because Redis refused writes, not unreachable
        self._next_try = 0.0  # monotonic
        self._backoff = 0.0
        self._listeners: list[Callable[[], object]] = []
        # ``from_url`` builds ``cls``; redis-py types its result as the base class.
        self.client = cast(GuardedRedis, GuardedRedis.from_url(
            url, socket_timeout=socket_timeout, socket_connect_timeout=connect_timeout,
            retry=Retry(NoBackoff(), 1, supported_errors=(redis.exceptions.ConnectionError,)),
            health_check_interval=30, client_name=f"hubcollect-{socket.gethostname()}-{self.pid}",
        ))
        self.client.link = self

    @property
    def up(self) -> bool:
        return self.down_since is None

    def on_up(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` each time Redis is reachable again (e.g. flush waiting writes)."""
        self._listeners.append(callback)

    def guard(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.down_since is not None and time.monotonic() < self._next_try:
            raise RedisUnavailable(f"Redis {self.label} unreachable: {self.last_error}")
        try:
            result = call(*args, **kwargs)
        except RedisUnavailable:
            raise
        except _CONNECTION_ERRORS as exc:
            self._failed(exc)
            raise RedisUnavailable(f"Redis {self.label} unreachable: {self.last_error}") from exc
        except redis.exceptions.ResponseError as exc:
            if not is_refusal(exc):
                raise
            self._failed(exc)
            raise RedisUnavailable(f"Redis {self.label} refuses writes: {self.last_error}"
                                   ) from exc
        if self.down_since is not None:
            self._recovered()
        return result

    def _failed(self, exc: BaseException) -> None:
        self.refusing = is_refusal(exc)
        self.last_error = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        if self.down_since is None:
            self.down_since = time.time()
            self.outages += 1
            self._backoff = self.backoff_start
            # The one line an outage gets (a recovery is counted in stats and status only).
            logger.warning("Redis %s %s (%s): pausing this worker's shared work; "
                           "retrying with backoff up to %.0fs", self.label,
                           "refuses writes" if self.refusing else "unreachable",
                           self.last_error, self.backoff_max)
        else:
            self._backoff = min(self.backoff_max, self._backoff * 2)
        self._next_try = time.monotonic() + self._backoff

    def _recovered(self) -> None:
        assert self.down_since is not None
        down = time.time() - self.down_since
        self.down_seconds += down
        self.down_since = None
        self.last_error = None
        self.refusing = False
        logger.debug("Redis %s reachable again after %.1fs", self.label, down)
        for callback in list(self._listeners):
            try:
                callback()
            except RedisUnavailable:
                return  # gone again: the next recovery calls them again
            except Exception:
                logger.exception("after Redis came back")

    def probe(self) -> bool:
        """One ``PING`` if the backoff allows it (one expiring write when Redis refused writes:
        an out-of-memory or read-only Redis still answers PING); True when Redis answers."""
        try:
            if self.refusing:
                self.client.set(PROBE_KEY, "1", px=1000)
            else:
                self.client.ping()
        except RedisUnavailable:
            return False
        return True

    async def wait_until_up(self, should_stop: Callable[[], bool] | None = None) -> bool:
        """Sleep (without blocking the reactor) until Redis answers; False if told to stop."""
        from scrapy.utils.asyncio import sleep

        while self.down_since is not None:
            if should_stop is not None and should_stop():
                return False
            wait = self._next_try - time.monotonic()
            if wait > 0:
                await sleep(min(wait, 1.0))
                continue
            self.probe()
        return True

    def close(self) -> None:
        self.client.connection_pool.disconnect()


class GuardedRedis(redis.Redis):
    """redis-py's client with every command (pipelines included) passed through the link."""

    link: RedisLink | None = None

    def execute_command(self, *args: Any, **options: Any) -> Any:
        if self.link is None:
            return super().execute_command(*args, **options)
        return self.link.guard(super().execute_command, *args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Pipeline:
        pipe = GuardedPipeline(self.connection_pool, self.response_callbacks, transaction,
                               shard_hint)
        pipe.link = self.link
        return pipe


class GuardedPipeline(Pipeline):
    link: RedisLink | None = None

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        if self.link is None:
            return super().execute(raise_on_error)
        try:
            return self.link.guard(super().execute, raise_on_error)
        except RedisUnavailable:
            self.reset()  # a failed pipeline must not keep its commands for the next use
            raise

    def immediate_execute_command(self, *args: Any, **options: Any) -> Any:
        if self.link is None:
            return super().immediate_execute_command(*args, **options)
        return self.link.guard(super().immediate_execute_command, *args, **options)


_links: dict[str, RedisLink] = {}


def get_link(url: str) -> RedisLink:
    """The process's link for ``url``; a forked child never reuses its parent's sockets."""
    link = _links.get(url)
    if link is None or link.pid != os.getpid():
        link = _links[url] = RedisLink(url)
    return link


class SharedClient:
    """For scrapy-redis: ``REDIS_PARAMS = {"redis_cls": ...SharedClient}`` makes its
    ``get_redis_from_settings`` hand out the process's one guarded client."""

    @classmethod
    def from_url(cls, url: str, **_ignored: Any) -> GuardedRedis:
        return get_link(url).client


_proc_id: tuple[int, int] | None = None


def process_id() -> int:
    """This worker process's id in the cluster: random, so no round trip (and no Redis) is
    needed to have one; 48 bits keep it an exact SQLite INTEGER and a short key."""
    global _proc_id
    if _proc_id is None or _proc_id[0] != os.getpid():
        _proc_id = (os.getpid(), random.SystemRandom().getrandbits(48) | 1)
    return _proc_id[1]


class RedisOutage:
    """The outage contract (:mod:`scraper.stores.base`) of a store on the process's link."""

    link: RedisLink

    @property
    def up(self) -> bool:
        return self.link.up

    async def wait_until_up(self, should_stop: Callable[[], bool] | None = None) -> bool:
        return await self.link.wait_until_up(should_stop)
