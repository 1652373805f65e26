"""Runners' heartbeats in Redis, and the cluster as ``python -m runner status`` shows it.

The runner forks its workers and must hold no open socket at fork time, so its heartbeat
connects, writes ``{p}:runner:{host}:{pid}`` (TTL ``RUNNER_TTL``) and disconnects, every
``RUNNER_BEAT_INTERVAL`` — less often while Redis is unreachable. It also tells the runner's
status whether Redis answers. Workers register themselves (:mod:`scraper.cluster.heartbeat`).
"""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any

from scraper.redis import defaults
from scraper.redis.keys import Keys
from scraper.settings import REDIS_KEY_PREFIX

logger = logging.getLogger("runner")

SPIDERS = ("docs", "trending", "search")
QUICK_TIMEOUT = 1.0
"""Status and the runner's heartbeat never wait longer than this for Redis."""


def mask(url: str) -> str:
    from scraper.utils.urlmask import mask_url

    return mask_url(url)


def quick_client(url: str, timeout: float = QUICK_TIMEOUT) -> Any:
    """A short-lived client with short timeouts and no retries (close it after use)."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout,
                                retry=Retry(NoBackoff(), 0))


def _errors() -> tuple[type[BaseException], ...]:
    """An unreachable Redis, or one that refuses writes (out of memory, a read-only replica
    after a failover; scraper/redis/connection.py): the beat is missed, the runner goes
    on."""
    import redis

    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError,
            redis.exceptions.ReadOnlyError, redis.exceptions.OutOfMemoryError)


class RunnerBeacon:
    def __init__(self, url: str, prefix: str = REDIS_KEY_PREFIX) -> None:
        self.url = url
        self.keys = Keys(prefix)
        self.host = socket.gethostname()
        self.state: dict[str, Any] = {"url": mask(url), "state": "unknown", "down_since": None,
                                      "error": None, "checked_at": None}
        self._next = 0.0  # time.monotonic() of the next beat
        self._backoff = defaults.RUNNER_BEAT_INTERVAL

    def key(self, pid: int) -> str:
        return self.keys.runner(self.host, pid)

    def beat(self, record: dict[str, Any], force: bool = False) -> None:
        """Write the runner's record (rate-limited); never raises."""
        now = time.time()  # stored and shown; the beat's pace is on the monotonic clock
        if not force and time.monotonic() < self._next:
            return
        client = quick_client(self.url)
        entry = json.dumps({**record, "host": self.host, "updated_at": now})
        try:
            pipe = client.pipeline(transaction=False)
            pipe.set(self.key(record["pid"]), entry, ex=int(defaults.RUNNER_TTL))
            pipe.hset(self.keys.boxes, box_name(self.host, record.get("data_dir", "")), entry)
            pipe.execute()
        except _errors() as exc:
            self._down(now, exc)
        else:
            self._up(now)
        finally:
            client.close()
        self.state["checked_at"] = now

    def _down(self, now: float, exc: BaseException) -> None:
        self.state["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        if self.state["state"] != "unreachable":
            self.state.update(state="unreachable", down_since=now)
            logger.warning("Redis %s unreachable (%s): workers pause their shared work until "
                           "it is back", self.state["url"], self.state["error"])
            self._backoff = defaults.RUNNER_BEAT_INTERVAL
        else:
            self._backoff = min(60.0, self._backoff * 2)
        self._next = time.monotonic() + min(self._backoff, 10.0)

    def _up(self, now: float) -> None:
        if self.state["state"] == "unreachable":
            logger.warning("Redis %s reachable again after %.0fs", self.state["url"],
                           now - (self.state["down_since"] or now))
        self.state.update(state="ok", down_since=None, error=None)
        self._next = time.monotonic() + defaults.RUNNER_BEAT_INTERVAL

    def leave(self, pid: int, data_dir: str = "") -> None:
        """A clean stop: the box leaves the cluster's list (a killed one stays, silent)."""
        client = quick_client(self.url)
        try:
            client.delete(self.key(pid))
            client.hdel(self.keys.boxes, box_name(self.host, data_dir))
        except _errors():
            pass
        finally:
            client.close()


def box_name(host: str, data_dir: str) -> str:
    """A box of the cluster: one runner's data dir on one host (a restart is the same box)."""
    return f"{host}:{data_dir}"


def _decode(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def cluster_status(url: str, prefix: str = REDIS_KEY_PREFIX) -> dict[str, Any]:
    """Runners seen, workers per machine, each spider's queue and round, the budget."""
    keys = Keys(prefix)
    out: dict[str, Any] = {"url": mask(url), "reachable": False}
    client = quick_client(url)
    try:
        seconds, micros = client.time()
        now = seconds + micros / 1e6
        runners = [json.loads(v) for v in _values(client, keys.runner_pattern)]
        boxes = {_decode(k): json.loads(v) for k, v in client.hgetall(keys.boxes).items()}
        procs = [json.loads(v) for v in _values(client, keys.proc_pattern)]
        queues = {}
        for spider in SPIDERS:
            pipe = client.pipeline(transaction=False)
            pipe.zcard(keys.requests(spider)).llen(keys.start_urls(spider))
            pipe.zcount(keys.busy(spider), now, "+inf").hgetall(keys.round(spider))
            queued, starts, busy, info = pipe.execute()
            info = {_decode(k): _decode(v) for k, v in info.items()}
            queues[spider] = {"requests": queued, "start_urls": starts, "busy": busy,
                              "round": int(info.get("id") or 0), "state": info.get("state"),
                              "started_at": float(info["started_at"]) if "started_at" in info
                              else None,
                              "next_round_at": float(info["next_round_at"])
                              if "next_round_at" in info else None}
        from scraper.budget.redisbudget import read_redis_buckets

        buckets = read_redis_buckets(client, keys)
        dataset = _dataset(client, keys)
    except _errors() as exc:
        out["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        return out
    finally:
        client.close()
    hosts: dict[str, dict[str, Any]] = {}
    by_runner: dict[str, dict[str, int]] = {}  # "host:runner pid" → spider → workers
    for proc in procs:
        spider = proc.get("spider", "?")
        host = hosts.setdefault(proc.get("host", "?"), {"workers": 0, "spiders": {}})
        host["workers"] += 1
        host["spiders"][spider] = host["spiders"].get(spider, 0) + 1
        mine = by_runner.setdefault(f"{proc.get('host')}:{proc.get('runner_pid')}", {})
        mine[spider] = mine.get(spider, 0) + 1
    out.update(reachable=True, now=now, runners=sorted(runners, key=lambda r: (r["host"],
                                                                                 r["pid"])),
               hosts=hosts, by_runner=by_runner, queues=queues, budget=buckets,
               boxes=boxes, silent_after=defaults.RUNNER_TTL, dataset=dataset)
    return out


def _dataset(client: Any, keys: Keys) -> dict[str, Any]:
    """The dataset box and what waits for it in Redis (:mod:`.shipping`)."""
    from scraper.cluster.shipping import dataset_box

    record = dataset_box(client, keys)
    return {"box": record.get("name") if record else None,
            "segments": client.llen(keys.dataset_queue),
            "bytes": int(client.get(keys.dataset_bytes) or 0)}


def _values(client: Any, pattern: str) -> list[bytes]:
    names = list(client.scan_iter(match=pattern, count=500))
    return [v for v in client.mget(names) if v is not None] if names else []
