"""The cluster's gap ledger, merged on the box where ``gaps`` and ``catalog`` run.

Every box writes its ledger events to one Redis stream (:mod:`scraper.cluster.ledger`). Here
they are copied, in stream order, into this box's ``state/ledger/{day}/{spider}-cluster.jsonl``
— the one-machine ledger's files, so ``gaps``, ``status``, ``metrics`` and the catalog read them
as they are — and the position reached is kept in ``state/ledger/cluster.json``, written after
the lines (a kill in between copies some lines twice, which the reader takes once).

Then each round not yet closed here is looked at in Redis (its hash, its busy markers, its
leases). A planned fetch with no outcome is written ``silent``:

* at once when its request is leased by a worker whose busy marker lapsed (a box killed or
  cut off): the cause names the box, ``lease lapsed (box …)``; a box that takes it over later
  records what came of it, which counts over the silent line;
* when the round is over (finished, or a later round seeded): ``no box took it`` — or the
  lapsed lease's box, when a box sent it and recorded nothing.

The round then gets its close line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scraper.redis.keys import Keys
from scraper.settings import LEDGER_KEEP_DAYS
from scraper.utils.ledger import (
    CLUSTER_SHARD,
    DETAIL_MAX,
    LEDGER_META,
    SILENT,
    append_line,
    close_quietly,
    ledger_file,
    ledger_root,
    open_ledger,
    prune_ledger,
    stamp_ms,
)
from scraper.utils.statefile import read_json, write_json_atomic

POSITION_FILE = "cluster.json"
BATCH = 1000
KEEP_OPEN_DAYS = 7
"""A round still open here after this long is forgotten (its stream events are gone too)."""
NO_BOX = "no box took it"
EVENTS = frozenset({"plan", "sent", "fetch", "close"})


def lapsed_cause(box: str) -> str:
    return f"lease lapsed ({box})"


@dataclass
class RoundSeen:
    """What this box's copy of the ledger holds of one round."""

    keys: list[str] = field(default_factory=list)
    reported: set[str] = field(default_factory=set)
    sent: dict[str, str] = field(default_factory=dict)  # key → box
    boxes: dict[str, str] = field(default_factory=dict)  # worker → box
    closed: bool = False


def merge_cluster_ledger(client: Any, keys: Keys, state_dir: Path) -> int:
    """Copy the stream's new events here and write what is silent; the events copied.
    Raises redis-py's errors and OSError."""
    position_path = ledger_root(state_dir) / POSITION_FILE
    position = read_json(position_path) or {}
    last = str(position.get("last") or "0-0")
    opened: dict[str, dict[str, Any]] = dict(position.get("open") or {})
    copied = 0
    while True:
        batch = client.xrange(keys.ledger, min=f"({last}", count=BATCH)
        if not batch:
            break
        lines: dict[Path, list[dict[str, Any]]] = {}
        for ident, fields in batch:
            last = ident.decode()
            record = _event(fields.get(b"e"))
            if record is None:
                continue
            if record["t"] == "plan":
                opened.setdefault(record["round"], {"spider": record["spider"],
                                                    "round_id": int(record.get("round_id") or 0)})
            lines.setdefault(_file(state_dir, record["spider"], record["round"]),
                             []).append(record)
        for path, records in lines.items():
            _append(path, records)
        copied += len(batch)
    oldest = stamp_ms(time.time() - KEEP_OPEN_DAYS * 86400)
    for stamp, info in sorted(opened.items()):
        if stamp < oldest or _settle(client, keys, state_dir, stamp, info["spider"],
                                     int(info["round_id"])):
            del opened[stamp]
    write_json_atomic(position_path, {"last": last, "open": opened})
    prune_ledger(state_dir, LEDGER_KEEP_DAYS)
    return copied


def _event(raw: bytes | None) -> dict[str, Any] | None:
    try:
        record = json.loads(raw or b"")
    except ValueError:
        return None  # not an event of ours: written by hand
    if not (isinstance(record, dict) and record.get("t") in EVENTS
            and isinstance(record.get("round"), str) and isinstance(record.get("spider"), str)
            and record.get("shard") == CLUSTER_SHARD and len(record["round"]) >= 10):
        return None
    return record


def _file(state_dir: Path, spider: str, stamp: str) -> Path:
    return ledger_file(state_dir, stamp[:10], f"{spider}-{CLUSTER_SHARD}")


def _append(path: Path, records: list[dict[str, Any]]) -> None:
    fd = open_ledger(path)
    try:
        for record in records:
            append_line(fd, record)
    finally:
        close_quietly(fd)


def _seen(path: Path, stamp: str) -> RoundSeen:
    seen = RoundSeen()
    for record in _read(path):
        if record.get("round") != stamp:
            continue
        kind, key = record.get("t"), str(record.get("key"))
        if kind == "plan" and isinstance(record.get("keys"), list):
            seen.keys = [str(k) for k in record["keys"]]
        elif kind == "fetch":
            seen.reported.add(key)
        elif kind == "sent":
            seen.sent.setdefault(key, str(record.get("box") or "?"))
            seen.boxes[str(record.get("worker"))] = str(record.get("box") or "?")
        elif kind == "close":
            seen.closed = True
    return seen


def _read(path: Path) -> Iterator[dict[str, Any]]:
    try:
        data = path.read_bytes()
    except OSError:
        return
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a torn tail
        if isinstance(record, dict):
            yield record


def _settle(client: Any, keys: Keys, state_dir: Path, stamp: str, spider: str,
            round_id: int) -> bool:
    """Write the round's silent fetches Redis tells of; True once the round is over."""
    path = _file(state_dir, spider, stamp)
    seen = _seen(path, stamp)
    state = {k.decode(): v.decode() for k, v in client.hgetall(keys.round(spider)).items()}
    over = seen.closed or _over(state, stamp, round_id)
    lapsed = _lapsed_leases(client, keys, spider)
    records = []
    for key in seen.keys:
        if key in seen.reported:
            continue
        if key in lapsed:
            worker = lapsed[key]
            box = seen.boxes.get(worker) or seen.sent.get(key) or f"worker {worker}"
            detail = (f"box {box} took it (worker {worker}) and stopped before recording an "
                      "outcome")
            records.append(_silent(stamp, spider, key, lapsed_cause(box), detail))
        elif over and key in seen.sent:
            box = seen.sent[key]
            detail = f"box {box} sent it and recorded no outcome before the round ended"
            records.append(_silent(stamp, spider, key, lapsed_cause(box), detail))
        elif over:
            detail = "the round ended with it still queued: no box took it"
            records.append(_silent(stamp, spider, key, NO_BOX, detail))
    if over and not seen.closed:
        records.append({"t": "close", "round": stamp, "spider": spider,
                        "shard": CLUSTER_SHARD, "reason": "merged: the round is over",
                        "at": stamp_ms()})
    if records:
        _append(path, records)
    return over


def _over(state: dict[str, str], stamp: str, round_id: int) -> bool:
    """Over in Redis: finished, a later round seeded, or its record gone (Redis emptied)."""
    if state.get("ledger_round", stamp) != stamp:
        return True
    try:
        current = int(state.get("id") or 0)
    except ValueError:
        return True
    return current != round_id or state.get("state") == "finished"


def _lapsed_leases(client: Any, keys: Keys, spider: str) -> dict[str, str]:
    """Ledger key → worker, of the requests leased by workers whose busy marker lapsed."""
    seconds, micros = client.time()
    now = seconds + micros / 1e6
    found: dict[str, str] = {}
    for raw in client.smembers(keys.lessees(spider)):
        worker = raw.decode()
        expiry = client.zscore(keys.busy(spider), worker)
        if expiry is not None and float(expiry) >= now:
            continue
        for value in client.hvals(keys.leases(spider, worker)):
            _, _, entry = value.partition(b"\n")
            try:
                meta = json.loads(entry).get("meta") or {}
            except (ValueError, AttributeError):
                continue
            if isinstance(meta, dict) and isinstance(meta.get(LEDGER_META), str):
                found.setdefault(meta[LEDGER_META], worker)
    return found


def _silent(stamp: str, spider: str, key: str, cause: str, detail: str) -> dict[str, Any]:
    return {"t": "fetch", "round": stamp, "spider": spider, "shard": CLUSTER_SHARD,
            "key": key, "outcome": SILENT, "cause": cause, "detail": detail[:DETAIL_MAX],
            "at": stamp_ms()}


def merge_or_say(redis_url: str, state_dir: Path, say: Any) -> None:
    """:func:`merge_cluster_ledger` with a short-lived client; trouble is one line to ``say``
    and what was merged before stays."""
    import redis

    from scraper.cluster.registry import quick_client
    from scraper.redis.defaults import SOCKET_TIMEOUT
    from scraper.settings import REDIS_KEY_PREFIX
    from scraper.utils.urlmask import mask_url

    client = quick_client(redis_url, SOCKET_TIMEOUT)
    try:
        merge_cluster_ledger(client, Keys(REDIS_KEY_PREFIX), state_dir)
    except redis.exceptions.RedisError as exc:
        say(f"gap ledger: Redis {mask_url(redis_url)}: {type(exc).__name__}; the cluster's "
            "ledger as last merged here")
    except OSError as exc:
        say(f"gap ledger: {exc.filename or state_dir}: {exc.strerror or exc}; the cluster's "
            "ledger as last merged here")
    finally:
        client.close()
