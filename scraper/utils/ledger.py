"""The gap ledger: every scheduled fetch of every round, and what came of it.

A round's scheduled fetches are its spider-shard's start entries: each trending list, each
search query (all its slices and pages), each docs site's start URL. A worker writes
(:class:`scraper.extensions.ledger.FetchLedger`) one JSON line per event to
``state/ledger/{YYYY-MM-DD}/{spider}-{i}of{N}.jsonl`` (the day the round started, UTC)::

    {"t": "plan", "round": "…", "spider": "docs", "shard": "0/1", "pid": 4242, "kind": "site",
     "keys": ["http://…/site0/", …]}
    {"t": "fetch", "round": "…", "key": "http://…/site0/", "outcome": "failed",
     "cause": "refused", "detail": "…", "at": "…"}
    {"t": "close", "round": "…", "reason": "finished", "at": "…"}

A round writes a key's first line of each outcome and cause only (a search query's pages of
data are one line). Each line is one ``write`` to a file opened ``O_APPEND``: a kill loses
nothing already written, and a torn last line (a kill inside that one call) is skipped by the
reader, and ended before the next round appends. A key of a plan with no outcome line is
``silent`` once its round can no longer write one: a later round of the spider-shard began, or
the worker (its pid) is gone. Its outcome is the worst of its lines: ``failed`` over
``skipped`` over ``data`` over ``not_modified``.

Read by the runner (``gaps``, ``status``, ``metrics``, the catalog): no Scrapy here.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scraper.utils.pidlock import pid_alive

DATA = "data"
NOT_MODIFIED = "not_modified"
FAILED = "failed"
SKIPPED = "skipped"
SILENT = "silent"
OUTCOMES = (DATA, NOT_MODIFIED, FAILED, SKIPPED, SILENT)
YIELDED = frozenset({DATA, NOT_MODIFIED})
"""Outcomes that are no gap: the data came, or the source said it had not changed."""
_RANK = {FAILED: 0, SKIPPED: 1, DATA: 2, NOT_MODIFIED: 3, SILENT: 4}
"""A written ``silent`` (the cluster's merge: :mod:`runner.catalog.clusterledger`) ranks last:
the box that takes the fetch over later records what really came of it."""
CLUSTER_SHARD = "cluster"
"""The shard of a distributed round: every box of the cluster worked from one queue."""

LEDGER_META = "ledger_key"
"""Request meta naming the scheduled fetch a request serves (set by the spiders)."""
LEDGER_DIR = "ledger"
DETAIL_MAX = 300


def ledger_root(state_dir: Path) -> Path:
    return state_dir / LEDGER_DIR


def ledger_file(state_dir: Path, day: str, slug: str) -> Path:
    return ledger_root(state_dir) / day / f"{slug}.jsonl"


def stamp_ms(now: float | None = None) -> str:
    """ISO-8601 UTC with milliseconds: two rounds of one shard never share a round id."""
    now = time.time() if now is None else now
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


def append_line(fd: int, record: dict[str, Any]) -> None:
    """One record, one ``write``: whole or (killed inside the call) a torn tail the reader
    skips."""
    data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


@dataclass(frozen=True, slots=True)
class Fetch:
    """One scheduled fetch of one round, resolved."""

    spider: str
    shard: str
    round: str  # when the round started, ISO-8601 UTC with milliseconds
    kind: str  # list, query or site
    key: str
    outcome: str
    cause: str  # '' for data and not_modified
    detail: str
    at: str  # when the outcome was recorded; the round's start for silent

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class _Round:
    spider: str
    shard: str
    round: str
    kind: str
    pid: int
    keys: list[str]
    outcomes: dict[str, list[tuple[str, str, str, str]]]  # key → (outcome, cause, detail, at)
    closed: bool = False


_parsed: dict[Path, tuple[tuple[int, int], list[dict[str, Any]]]] = {}
"""Each file's records as last read, by its size and mtime: the runner's metrics (every status
write) read the last day's files again only when a worker has written to them."""


def _records(path: Path) -> list[dict[str, Any]]:
    try:
        stat = path.stat()
        seen = (stat.st_size, stat.st_mtime_ns)
        cached = _parsed.get(path)
        if cached is not None and cached[0] == seen:
            return cached[1]
        data = path.read_bytes()
    except OSError:
        return []
    records = list(_lines(data))
    _parsed[path] = (seen, records)
    return records


def _lines(data: bytes) -> Iterator[dict[str, Any]]:
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a torn tail (a kill inside a write)
        if isinstance(record, dict) and isinstance(record.get("round"), str):
            yield record


def _day_dirs(state_dir: Path, since: str | None) -> list[Path]:
    root = ledger_root(state_dir)
    try:
        days = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return []
    # A day's directory holds the rounds that started that day, whenever they wrote.
    first = since[:10] if since else ""
    return [d for d in days if d.name >= first]


def _read_rounds(state_dir: Path, since: str | None) -> dict[tuple[str, str], list[_Round]]:
    rounds: dict[tuple[str, str, str], _Round] = {}
    read = set()
    for day in _day_dirs(state_dir, since):
        for path in sorted(day.glob("*.jsonl")):
            read.add(path)
            for record in _records(path):
                _apply(rounds, record)
    for gone in set(_parsed) - read:  # only what the last read needed stays in memory
        del _parsed[gone]
    by_shard: dict[tuple[str, str], list[_Round]] = {}
    for r in sorted(rounds.values(), key=lambda r: r.round):
        by_shard.setdefault((r.spider, r.shard), []).append(r)
    return by_shard


def _apply(rounds: dict[tuple[str, str, str], _Round], record: dict[str, Any]) -> None:
    kind = record.get("t")
    ident = (str(record.get("spider")), str(record.get("shard")), record["round"])
    if kind == "plan":
        if ident in rounds:
            return  # copied twice (the cluster's merge killed before it noted how far it got)
        keys = record.get("keys")
        rounds[ident] = _Round(ident[0], ident[1], ident[2], str(record.get("kind", "")),
                               int(record.get("pid") or 0),
                               [str(k) for k in keys] if isinstance(keys, list) else [], {})
        return
    found = rounds.get(ident)
    if found is None:
        return  # its plan line is in a file not read (before --since)
    if kind == "close":
        found.closed = True
    elif kind == "fetch" and record.get("outcome") in _RANK:
        found.outcomes.setdefault(str(record.get("key")), []).append(
            (record["outcome"], str(record.get("cause") or ""),
             str(record.get("detail") or ""), str(record.get("at") or found.round)))


def resolve(outcomes: list[tuple[str, str, str, str]]) -> tuple[str, str, str, str]:
    """The worst of a key's outcome lines (its first of that outcome: the cause it began
    with)."""
    return min(outcomes, key=lambda o: _RANK[o[0]])


def scheduled_fetches(state_dir: Path, since: str | None = None, *,
                      settled_only: bool = False) -> list[Fetch]:
    """Every scheduled fetch of every round that started at or after ``since`` (ISO-8601 UTC),
    in round order. A key the round has not reported yet, while it can still report it, is
    left out; with ``settled_only``, so is every key of such a round."""
    fetches: list[Fetch] = []
    for rounds in _read_rounds(state_dir, since).values():
        for index, r in enumerate(rounds):
            if since and r.round < since:
                continue
            running = (not r.closed and index == len(rounds) - 1 and r.pid > 0
                       and pid_alive(r.pid))
            if r.shard == CLUSTER_SHARD:  # its end is decided in Redis, and written as a close
                running = not r.closed
            if running and settled_only:
                continue
            for key in r.keys:
                seen = r.outcomes.get(key)
                if seen:
                    outcome, cause, detail, at = resolve(seen)
                elif running:
                    continue
                else:
                    outcome, cause, at = SILENT, "", r.round
                    detail = (f"worker pid {r.pid} ended without recording this fetch"
                              if not r.closed else "the round closed without recording it")
                fetches.append(Fetch(r.spider, r.shard, r.round, r.kind, key, outcome, cause,
                                     detail[:DETAIL_MAX], at))
    return fetches


@dataclass(frozen=True, slots=True)
class Span:
    """Consecutive rounds in which one scheduled fetch yielded nothing for the same reason."""

    spider: str
    kind: str
    key: str
    outcome: str
    cause: str
    first_seen: str
    last_seen: str
    rounds: int
    detail: str  # the latest round's

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def gap_spans(fetches: Iterable[Fetch]) -> list[Span]:
    """What yielded nothing, per spider and key: consecutive rounds with the same outcome and
    cause are one span; a round that yielded ends it. Ordered by spider, key, first seen."""
    by_key: dict[tuple[str, str], list[Fetch]] = {}
    for fetch in fetches:
        by_key.setdefault((fetch.spider, fetch.key), []).append(fetch)
    spans: list[Span] = []
    for (spider, key), rows in sorted(by_key.items()):
        current: Span | None = None
        for fetch in sorted(rows, key=lambda f: f.round):
            if fetch.outcome in YIELDED:
                current = None
                continue
            if current is not None and (current.outcome, current.cause) == (fetch.outcome,
                                                                            fetch.cause):
                current = Span(spider, fetch.kind, key, fetch.outcome, fetch.cause,
                               current.first_seen, fetch.round, current.rounds + 1,
                               fetch.detail)
                spans[-1] = current
            else:
                current = Span(spider, fetch.kind, key, fetch.outcome, fetch.cause, fetch.round,
                               fetch.round, 1, fetch.detail)
                spans.append(current)
    return spans


def outcome_counts(fetches: Iterable[Fetch]) -> dict[str, dict[str, int]]:
    """Per spider: scheduled fetches by outcome (every outcome present, zeros included)."""
    counts: dict[str, dict[str, int]] = {}
    for fetch in fetches:
        per = counts.setdefault(fetch.spider, dict.fromkeys(OUTCOMES, 0))
        per[fetch.outcome] += 1
    return counts


def yielded_share(counts: dict[str, int]) -> float | None:
    """The share of scheduled fetches that yielded data (or not modified); None: none
    scheduled."""
    total = sum(counts.values())
    return None if not total else sum(counts[o] for o in YIELDED) / total


def since_hours(hours: float, now: float | None = None) -> str:
    return stamp_ms((time.time() if now is None else now) - hours * 3600)


def prune_ledger(state_dir: Path, keep_days: int, now: float | None = None) -> list[str]:
    """Remove the day directories older than ``keep_days``; the days removed."""
    cutoff = time.strftime("%Y-%m-%d", time.gmtime(
        (time.time() if now is None else now) - keep_days * 86400))
    import shutil  # here: `status` reads the ledger, and shutil brings bz2 and lzma

    removed = []
    for day in _day_dirs(state_dir, None):
        if day.name < cutoff:
            shutil.rmtree(day, ignore_errors=True)  # another worker may be removing it too
            removed.append(day.name)
    return removed


def open_ledger(path: Path) -> int:
    """The file to append to; a torn last line (a worker killed inside a write) is ended first,
    so that the next line is whole."""
    from scraper.utils.statefile import open_private

    fd = open_private(path, os.O_RDWR | os.O_APPEND)
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        os.write(fd, b"\n")
    return fd


def close_quietly(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
