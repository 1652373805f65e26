"""The gap ledger in the distributed mode: every box's events in one Redis stream.

One box cannot know what the others fetched, so each writes what it knows to ``{p}:ledger``
(:mod:`scraper.redis.keys`; capped at ``LEDGER_STREAM_MAXLEN`` events, expiring
``LEDGER_STREAM_TTL`` after the last: :mod:`scraper.redis.defaults`), each event one JSON line
of the one-machine ledger's format (:mod:`scraper.utils.ledger`) with shard ``cluster``:

* **plan** — written by the box that seeds the round, in the seeding transaction
  (:mod:`scraper.cluster.rounds`): every trending list, search query or docs site seeded, the
  round's id and its stamp (kept in the round's hash as ``ledger_round``, read by the boxes
  that join it);
* **sent** — the first time a box sends a request of a scheduled fetch: which box and worker;
* **fetch** — the outcome, written by the box that got it, before the lease of its request is
  let go (the ledger's middleware is inside the leases' one), so a fetch that leaves the
  leases has its outcome in Redis;
* **close** — by each worker that saw the round over for the cluster.

The dataset box copies the stream into its own ledger files and writes the ``silent`` fetches
(:mod:`runner.catalog.clusterledger`). Nothing secret is written: URLs of the config's start
list, search queries, box ids and outcomes (a cause's detail is the one the log shows).
"""

from __future__ import annotations

import json
import logging
import socket
from typing import Any

import redis
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from scraper.cluster.boxid import Box
from scraper.cluster.rounds import SpiderRound, get_round
from scraper.extensions.ledger import FetchLedger
from scraper.redis import defaults
from scraper.redis.connection import get_link
from scraper.redis.keys import Keys
from scraper.utils.ledger import CLUSTER_SHARD, LEDGER_META, stamp_ms

logger = logging.getLogger(__name__)

LEDGER_ROUND_FIELD = "ledger_round"
"""The round hash's field holding the round's stamp in the ledger."""


def add_event(keys: Keys, record: dict[str, Any]) -> list[list[str]]:
    """The commands that append one event to the stream, capped and expiring."""
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    return [["XADD", keys.ledger, "MAXLEN", "~", str(defaults.LEDGER_STREAM_MAXLEN), "*",
             "e", line],
            ["EXPIRE", keys.ledger, str(defaults.LEDGER_STREAM_TTL)]]


def plan_commands(keys: Keys, spider: str, round_id: int, stamp: str, kind: str,
                  requests: list[Request], box: str) -> list[list[str]]:
    """For the seeding transaction: the round's plan (its start requests' ledger keys, each
    once, in order) and its stamp in the round's hash."""
    plan = list(dict.fromkeys(str(r.meta[LEDGER_META]) for r in requests
                              if LEDGER_META in r.meta))
    record = {"t": "plan", "round": stamp, "spider": spider, "shard": CLUSTER_SHARD, "pid": 0,
              "kind": kind, "keys": plan, "round_id": round_id, "box": box}
    return [["HSET", keys.round(spider), LEDGER_ROUND_FIELD, stamp], *add_event(keys, record)]


def this_box(crawler: Crawler) -> str:
    """The box's id (state/box-id), or its host name when the state dir cannot be read."""
    from scraper.utils.layout import DataLayout

    try:
        return Box.here(DataLayout.from_settings(crawler.settings)).id
    except OSError:
        return socket.gethostname()


class ClusterLedger(FetchLedger):
    """The ledger's extension in the distributed mode: events to Redis, not to a file."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        self.link = get_link(settings["REDIS_URL"])
        self.redis_keys = Keys.from_settings(settings)
        self.box = this_box(crawler)
        self.sent: set[str] = set()

    @classmethod
    def enabled(cls, settings: BaseSettings) -> bool:
        return settings.getbool("LEDGER_ENABLED") and settings.getbool("COLLECTOR_DISTRIBUTED")

    def spider_opened(self, spider: Any) -> None:
        """Nothing to open: the plan is the seeding box's, written when it seeds."""

    @property
    def spider_round(self) -> SpiderRound | None:
        spider = self.crawler.spider
        if spider is None:
            return None
        return get_round(self.link, self.redis_keys, spider.name)

    def fetch_sent(self, request: Request) -> None:
        super().fetch_sent(request)
        key = request.meta[LEDGER_META]
        if key not in self.sent:
            self.sent.add(key)
            spider_round = self.spider_round
            self.write({"t": "sent", "key": key,
                        "worker": spider_round.worker if spider_round else ""})

    def fetch_judged(self, request: Request, outcome: str, cause: str, detail: str) -> None:
        if request.meta.get(LEDGER_META) in self.reported:
            self.write_fetch(request.meta[LEDGER_META], outcome, cause, detail)

    def spider_closed(self, reason: str) -> None:
        # A box that closes mid-round gave its leases back: another box fetches and records
        # them. Only a round over for the cluster (``finished``) is closed.
        if reason == "finished":
            self.write({"t": "close", "reason": reason})

    def write(self, record: dict[str, Any]) -> None:
        spider_round = self.spider_round
        stamp = spider_round.ledger_round if spider_round is not None else ""
        if not stamp:
            return  # a round seeded before the ledger was kept: it has no plan to match
        record.update(round=stamp, spider=self.spider_name, shard=CLUSTER_SHARD, box=self.box)
        record.setdefault("at", stamp_ms())
        try:
            pipe = self.link.client.pipeline(transaction=False)
            for command in add_event(self.redis_keys, record):
                pipe.execute_command(*command)
            pipe.execute()
        except redis.exceptions.RedisError as exc:  # the crawl goes on, said once
            if not self.failing:
                logger.warning("gap ledger: cannot write to Redis (%s)", type(exc).__name__)
            self.failing = True
        else:
            self.failing = False
