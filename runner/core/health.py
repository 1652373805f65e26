"""Healthy means data is flowing: each spider-shard judged by what its rounds produced.

A process that exists proves nothing (a worker against a dead DNS exits 0 every round), so
a spider-shard is judged by its worker's state file (:class:`scraper.utils.statefile.WorkerRecord`,
kept across rounds and runner restarts) and the runner's slot for it. It is unhealthy when

- ``failing``: its last ``health.failed_rounds`` rounds sent requests and got no answer that
  carried data (2xx, or a 304),
- ``empty``: its listing pages (trending, a search page) parsed to zero rows: a markup change,
  or an error page served with status 200,
- ``drift``: its listing pages still parse to rows, but the rows lost a field the same list
  had in its last rounds, or half its rows (:mod:`scraper.trending.drift`): a markup change,
- ``hung``: its round has run longer than ``health.max_round`` (a hung or SIGSTOPped worker).

A spider is unhealthy when all its shards are, or when one of them is hung (only a restart
cures that one). ``status`` shows each shard's verdict; the watchdog reports a spider's
unhealth once when it begins and once when it ends; ``--once`` fails on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from runner.core.runnerstate import SlotRecord, SlotStatus
from scraper.config.collector import HealthConfig
from scraper.utils.outcome import NO_DATA, empty_reason, robots_requests, round_problem
from scraper.utils.statefile import WorkerRecord
from scraper.utils.units import counted, format_duration

UNHEALTHY = ("failing", "empty", "drift", "hung")


@dataclass(frozen=True, slots=True)
class ShardHealth:
    spider: str
    shard: str
    verdict: str  # ok / new (no round yet) / no-data (not yet failing) / failing / empty /
    #               drift / hung
    reason: str = ""  # for an unhealthy one: what is wrong, one line

    @property
    def unhealthy(self) -> bool:
        return self.verdict in UNHEALTHY


def shard_health(slot: SlotRecord, record: WorkerRecord | None, health: HealthConfig,
                 round_interval: float, mono_now: float) -> ShardHealth:
    """The verdict on one spider-shard; ``record`` is its worker's file, any round's."""
    limit = health.round_limit(round_interval)
    started = slot.round_started_monotonic
    if slot.state == SlotStatus.RUNNING and started is not None and mono_now - started > limit:
        running = format_duration(mono_now - started)
        return ShardHealth(slot.spider, slot.shard, "hung",
                           f"round running {running} > max {format_duration(limit)}")
    if record is None:
        return ShardHealth(slot.spider, slot.shard, "new")
    if record.empty_listings:
        return ShardHealth(slot.spider, slot.shard, "empty",
                           empty_reason(record.empty_listing_url))
    if record.drift_listings:
        return ShardHealth(slot.spider, slot.shard, "drift", record.drift or "markup drift")
    if record.failed_rounds:
        verdict = "failing" if record.failed_rounds >= health.failed_rounds else "no-data"
        return ShardHealth(slot.spider, slot.shard, verdict,
                           record.first_error or NO_DATA)
    return ShardHealth(slot.spider, slot.shard, "ok")


def unhealthy_spiders(shards: Iterable[ShardHealth],
                      failed_rounds: int) -> dict[str, tuple[str, str]]:
    """spider → (kind, one-line reason) for every unhealthy spider, in plan order."""
    by_spider: dict[str, list[ShardHealth]] = {}
    for shard in shards:
        by_spider.setdefault(shard.spider, []).append(shard)
    result: dict[str, tuple[str, str]] = {}
    for spider, mine in by_spider.items():
        n = len(mine)
        hung = [s for s in mine if s.verdict == "hung"]
        if hung:
            result[spider] = ("hung", f"{spider} {len(hung)}/{n} shards hung "
                                      f"({hung[0].reason})")
            continue
        if not all(s.unhealthy for s in mine):
            continue
        empty = [s for s in mine if s.verdict == "empty"]
        drifted = [s for s in mine if s.verdict == "drift"]
        if empty:
            result[spider] = ("empty", f"{spider} {len(empty)}/{n} shards: {empty[0].reason}")
        elif drifted:
            result[spider] = ("drift", f"{spider} {len(drifted)}/{n} shards: "
                                       f"{drifted[0].reason}")
        else:
            reason = next((s.reason for s in mine if s.reason != NO_DATA), NO_DATA)
            result[spider] = ("failing", f"{spider} {n}/{n} shards fetched nothing in "
                                         f"{failed_rounds} rounds ({reason})")
    return result


def round_failed(record: WorkerRecord | None) -> str | None:
    """Why a finished round counts as failed (``--once``), or None: it sent requests and no
    answer carried data, or a listing page parsed to zero rows. A round with nothing to send
    (everything already collected and unchanged) is not a failure."""
    if record is None:
        return "left no state file"
    if record.drift_listings and not record.empty_listings:
        return record.drift or "markup drift"
    return round_problem(record.requests, record.ok, record.empty_listing_url,
                         record.empty_listings, record.first_error,
                         robots_requests(record.stats))


def once_summary(spider: str, records: list[WorkerRecord | None],
                 problems: list[str]) -> str:
    """``docs: 2/2 shards ok, 40 pages, 120 new items`` — a ``--once`` run's line per spider;
    ``problems`` holds each failed shard's reason."""
    n = len(records)
    pages = sum(r.pages for r in records if r)
    items = sum(r.items for r in records if r)
    line = (f"{spider}: {n - len(problems)}/{n} shards ok, {counted(pages, 'page')}, "
            f"{counted(items, 'new item')}")
    if problems:
        line += f"; {problems[0]}"
    return line
