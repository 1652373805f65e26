"""The cluster's dataset on one box: which box builds it, and the drain of what the others ship.

In the distributed mode every box writes the items it fetched into its own ``items/``, and ships
its closed segments to Redis (:mod:`scraper.cluster.shipping`). ``python -m runner catalog``
builds the cluster's catalog on one box, the *dataset box*:

* The first box where ``catalog`` is run by hand becomes it (``{p}:dataset:box``, set only if
  unset); ``catalog --take-over`` makes this box it instead. The runner's own periodic build
  (``--scheduled``) never chooses: the dataset goes where the user first asked for it.
* There, ``catalog`` first drains the shipped segments into ``items/{spider}/{origin}--
  {segment}.jsonl.gz`` — written to a hidden temporary file, synced, renamed into place, the
  directory synced, and only then removed from Redis — so a kill at any instant loses nothing
  (the entry is still in Redis) and writes nothing twice (a second drain of an entry finds the
  file, or the catalog's record of it, and skips it). The catalog then loads those files like
  its own segments, each once (``loaded_files``).
* On any other box ``catalog`` says in one line where the dataset is, and how to take over.

The last role Redis gave this box is kept in ``state/dataset-box.json``: with Redis away, the
dataset box still builds from what it has, and another box still says where the dataset is.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.catalog.retention import remove_older
from runner.catalog.shipments import (
    EntryGone,
    UnreadableShipment,
    keep,
    read_fields,
    receive,
    remove_stale,
)
from scraper.cluster.boxid import ID_RE, Box, BoxIdClash
from scraper.cluster.registry import quick_client
from scraper.cluster.shipping import DONE, ENTRY_RE, QUARANTINED, Ledger, dataset_box
from scraper.config.collector import CollectorConfig
from scraper.redis.defaults import SOCKET_TIMEOUT
from scraper.redis.keys import Keys
from scraper.settings import REDIS_KEY_PREFIX
from scraper.utils.itemsizes import forget, forget_all
from scraper.utils.layout import DataLayout
from scraper.utils.pidlock import exclusive_or_skip
from scraper.utils.statefile import private_dirs, read_json, write_json_atomic
from scraper.utils.urlmask import mask_url

Say = Callable[[str], None]


@dataclass(slots=True)
class DrainResult:
    received: int = 0
    bytes: int = 0
    skipped: int = 0  # here already (a second drain of an entry, or this box's own)
    refused: int = 0  # not an entry this collector ships
    quarantined: int = 0  # unreadable: set aside under quarantine/shipped/
    boxes: set[str] = field(default_factory=set)

    def describe(self) -> str:
        skipped = f", {self.skipped} here already" if self.skipped else ""
        if self.quarantined:
            skipped += f", {self.quarantined} unreadable set aside in quarantine/"
        segments = "segment" if self.received == 1 else "segments"
        boxes = "box" if len(self.boxes) == 1 else "boxes"
        return (f"catalog: received {self.received} shipped {segments} "
                f"({self.bytes / 1e6:.1f} MB) from {len(self.boxes)} other {boxes}{skipped}")


def choose(client: Any, keys: Keys, box: Box, *, take_over: bool, scheduled: bool
           ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the dataset box now, the one it replaced); this box becomes it when unset (by hand) or
    told to take over."""
    mine = {"id": box.id, "name": box.name, "since": time.time()}
    if take_over:
        old = client.set(keys.dataset_box, json.dumps(mine), get=True)
        before = _record(old)
        return mine, before if before and before.get("id") != box.id else None
    current = dataset_box(client, keys)
    if current is None and not scheduled:
        if client.set(keys.dataset_box, json.dumps(mine), nx=True):
            return mine, None
        current = dataset_box(client, keys)
    return current, None


def _record(raw: bytes | None) -> dict[str, Any] | None:
    """A dataset box's record as Redis held it; None when there was none or it was no record
    (a value someone wrote by hand: nothing to name)."""
    try:
        record = json.loads(raw) if raw else None
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def loaded_in_catalog(db: Path) -> Callable[[str], bool]:
    """Whether the catalog has loaded an item file (path relative to ``items/``)."""
    if not db.exists():
        return lambda rel: False
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)

    def loaded(rel: str) -> bool:
        try:
            return conn.execute("SELECT 1 FROM loaded_files WHERE path IN (?, ?)",
                                (rel, rel.removesuffix(".gz"))).fetchone() is not None
        except sqlite3.OperationalError:  # no table yet
            return False

    return loaded


def drain(client: Any, keys: Keys, layout: DataLayout, box: Box,
          loaded: Callable[[str], bool], warn: Say) -> DrainResult:
    """Every entry queued now into ``items/``, each once; an unreadable one into
    ``quarantine/shipped/`` with one line (:mod:`runner.catalog.shipments`). Raises a Redis
    error or an OSError on the way (what is not drained stays in Redis for the next run)."""
    result = DrainResult()
    done = client.register_script(DONE)
    for directory in (*layout.items_root.glob("*/"),
                      *(layout.quarantine_dir / "shipped").glob("*/")):
        remove_stale(directory)  # a killed drain's
    for raw in client.lrange(keys.dataset_queue, 0, -1):
        entry = raw.decode("utf-8", "replace")
        seg = keys.dataset_segment(entry)
        match = ENTRY_RE.fullmatch(entry)
        if match is None:
            result.refused += 1
            warn(f"{keys.dataset_queue}: {entry[:80]!r} is not a segment a box of this "
                 "collector ships; dropped unread")
            done(keys=[keys.dataset_bytes, seg, keys.dataset_queue], args=[raw])
            continue
        target = layout.items_root / entry
        kept_aside = False
        try:
            declared = read_fields(client, seg)
            shipper, file = declared.shipper, declared.file
            if match["origin"] == box.id or _here(target, entry, loaded):
                result.skipped += 1
            else:
                result.bytes += receive(client, seg, declared, target)
                forget(layout, match["spider"])  # a closed file it did not count
                result.received += 1
                result.boxes.add(match["origin"])
        except EntryGone:  # drained by another, or lost by Redis: its box ships it again
            done(keys=[keys.dataset_bytes, seg, keys.dataset_queue], args=[raw])
            continue
        except UnreadableShipment as exc:
            # Set aside, and said so to its box: it ships it no more, and keeps its own copy.
            shipper, file = exc.shipper or "", exc.file or ""
            aside = keep(client, seg, layout, entry, exc.why)
            warn(f"{keys.dataset_queue}: {entry}: {exc.why}; set aside as {aside}, the other "
                 "segments load")
            result.quarantined += 1
            kept_aside = True
        if file and ID_RE.fullmatch(shipper):  # on disk here: the box that shipped it hears so
            heard = f"{box.id} {file}" + (f" {QUARANTINED}" if kept_aside else "")
            done(keys=[keys.dataset_bytes, seg, keys.dataset_queue,
                       keys.dataset_confirmed(shipper, match["spider"])], args=[raw, heard])
        else:
            done(keys=[keys.dataset_bytes, seg, keys.dataset_queue], args=[raw])
    return result


def _here(target: Path, rel: str, loaded: Callable[[str], bool]) -> bool:
    """In ``items/`` or the catalog already. One set aside earlier is not: a box ships it again
    only when Redis lost it, or its confirmation, and this copy may be sound."""
    plain = target.with_name(target.name.removesuffix(".gz"))
    return target.exists() or plain.exists() or loaded(rel)


def gather(config: CollectorConfig, layout: DataLayout, *, take_over: bool, scheduled: bool,
           say: Say, warn: Say) -> bool:
    """Before a catalog build in the distributed mode: True when this box builds the cluster's
    catalog (after draining what was shipped to it), False after saying where it is built or
    why it cannot say."""
    assert config.redis_url
    import redis

    keys = Keys(REDIS_KEY_PREFIX)
    try:  # every local check before Redis is told anything
        private_dirs(layout.shipped_dir)
        box = Box.here(layout)
    except OSError as exc:
        say(f"catalog: {exc.filename or layout.state_dir}: {exc.strerror or exc}; the state "
            "dir must be a writable directory (data_dir/state)")
        return False
    client = quick_client(config.redis_url, SOCKET_TIMEOUT)  # a 1 MB chunk per command
    try:
        return _gather(client, keys, box, layout, take_over, scheduled, say, warn)
    except BoxIdClash as exc:
        say(f"catalog: {exc}")
        return False
    except OSError as exc:
        say(f"catalog: {exc.filename or layout.state_dir}: {exc.strerror or exc}; what was "
            "shipped stays in Redis for the next run")
        return False
    except redis.exceptions.RedisError as exc:
        why = _redis_trouble(config.redis_url, exc)
        known = read_json(layout.dataset_role) or {}
        if known.get("id") == box.id:
            warn(f"{why}: built from the segments already here; what was shipped comes next "
                 "time")
            return True
        say(_elsewhere(known or None, why))
        return False
    finally:
        client.close()


def _redis_trouble(url: str, exc: Exception) -> str:
    import redis

    where = f"Redis {mask_url(url)}"
    if isinstance(exc, redis.exceptions.AuthenticationError) or "WRONGPASS" in str(exc) \
            or "NOAUTH" in str(exc):
        return (f"{where} refused the password of redis_url (wrong or missing: the one in "
                "its requirepass or ACL)")
    if isinstance(exc, redis.exceptions.ResponseError):
        return f"{where} answered an error ({str(exc)[:80]})"
    return f"{where} is unreachable ({type(exc).__name__})"


def _gather(client: Any, keys: Keys, box: Box, layout: DataLayout, take_over: bool,
            scheduled: bool, say: Say, warn: Say) -> bool:
    box.register(client, keys.dataset_ids)
    current, replaced = choose(client, keys, box, take_over=take_over, scheduled=scheduled)
    if current is not None:
        write_json_atomic(layout.dataset_role, current)
    if current is None or current["id"] != box.id:
        say(_elsewhere(current, None))
        return False
    if replaced:
        say(f"catalog: this box ({box.name}) builds the cluster's dataset now, in place of "
            f"{replaced.get('name')}; every box ships its segments here, the ones it received "
            "too")
    with exclusive_or_skip(layout.drain_lock) as mine:
        if not mine:  # another drain is at it: this build loads what it has written so far
            return True
        try:
            say(drain(client, keys, layout, box, loaded_in_catalog(layout.catalog_db),
                      warn).describe())
        except OSError as exc:  # a full disk: what is not drained stays in Redis
            warn(f"{exc.filename or layout.items_root}: {exc.strerror}; the segments not "
                 "drained yet stay in Redis for the next run")
        merge_ledger(client, keys, layout, warn)
    return True


def merge_ledger(client: Any, keys: Keys, layout: DataLayout, warn: Say) -> None:
    """The cluster's gap ledger into this box's, for the catalog's ``fetch_ledger``."""
    from runner.catalog.clusterledger import merge_cluster_ledger

    try:
        merge_cluster_ledger(client, keys, layout.state_dir)
    except OSError as exc:
        warn(f"gap ledger: {exc.filename or layout.state_dir}: {exc.strerror or exc}; the "
             "cluster's events stay in Redis for the next run")


def remove_confirmed_segments(layout: DataLayout, keep_days: int,
                              now: float | None = None) -> int:
    """``items_keep_days`` on a box that does not build the dataset: remove its ``.jsonl.gz``
    segments older than ``keep_days`` that the dataset box confirmed it has (the rule of the
    dataset box's catalog, where "loaded" is "confirmed") - not those it set aside, unread;
    returns how many."""
    spiders = (listing.name.removesuffix(".confirmed")
               for listing in sorted(layout.shipped_dir.glob("*.confirmed")))
    ledgers = (Ledger(layout, spider) for spider in spiders)
    removed = remove_older((layout.items_dir(ledger.spider) / f"{name}.gz" for ledger in ledgers
                            for name in ledger.confirmed() - ledger.quarantined()), keep_days, now)
    if removed:
        forget_all(layout)
    return removed


def known_elsewhere(layout: DataLayout) -> str | None:
    """Without Redis: the line ``catalog`` said last on a box that does not build the cluster's
    dataset (from ``state/dataset-box.json``), or None when this box builds it or never asked."""
    known = read_json(layout.dataset_role)
    try:
        mine = layout.box_id_file.read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        mine = ""
    if not known or known.get("id") == mine:
        return None
    return _elsewhere(known, None)


def _elsewhere(current: dict[str, Any] | None, why: str | None) -> str:
    if current is None:
        return ("catalog: no box builds the cluster's dataset yet (every box ships its segments "
                "to Redis for it): run 'python -m runner catalog' by hand on the box that should"
                + (f"; {why}" if why else ""))
    return (f"catalog: the cluster's dataset is built on {current.get('name')}, where this box "
            "ships its segments" + (f" ({why})" if why else "")
            + "; to build it here instead: python -m runner catalog --take-over")

