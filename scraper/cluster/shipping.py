"""One dataset for the cluster: each box ships its closed item segments to Redis, bounded in bytes.

Items are written on whichever box fetched them. The catalog is built on one box, the *dataset
box* (``{p}:dataset:box``, recorded by ``python -m runner catalog``: :mod:`runner.catalog.
gather`); the others hand it their segments through Redis — scrapy-redis's items list drained by
a consumer, with whole closed segments as the entries instead of one item each:

* **Only closed segments**: ``.jsonl`` / ``.jsonl.gz`` files of ``items/{spider}/``, which are
  never written again (:mod:`pipelines.segments`); an open ``.part`` or a ``.tmp`` never.
* **Bounded**: a segment's upload begins by reserving its size on disk in ``{p}:dataset:bytes``
  — only while that total is under ``DISTRIBUTED_SHIP_MAX_BYTES``, or zero — so Redis holds at
  most the cap, or one segment larger than it. It is uploaded gzip-compressed in chunks to
  ``{p}:dataset:upload:{box}:{entry}`` and committed to ``{p}:dataset:seg:{entry}`` + the queue
  ``{p}:dataset:queue`` by one script (the reservation becomes the segment's count). A refused
  one stays on disk, untouched, and goes at a later round's end.
* **Nothing lost, nothing twice**: the box's ledger (``state/shipped/{spider}.list``, appended
  and fsynced after the commit answered) says what went; a kill before the append ships the
  segment again, and the dataset box skips an entry whose file it has. The drain confirms each
  entry it wrote to disk (``{p}:dataset:confirmed:{box}:{spider}``, in the step that removes it
  from Redis); the box pops that into ``{spider}.confirmed``. A shipped entry that is neither
  in Redis nor confirmed was lost by Redis (an older snapshot, a failover, a flush): shipped
  again. When the dataset box changes (``catalog --take-over``) the ledger starts over, so the
  new one receives every box's segments — the old dataset box's included, with those it had
  received: an entry keeps the name of the box that wrote it (``{origin}--{segment}``), so
  nothing comes back to its own box and nothing is written twice.
* **An unreadable one is kept, said once**: a segment the drain cannot read (fields unlike an
  upload's, chunks past their declared size, a gzip that does not check:
  :mod:`runner.catalog.shipments`) is set aside in the dataset box's ``quarantine/`` and
  confirmed as such (``{dataset box} {segment} quarantined``): the box ships it no more, logs
  one WARNING, and keeps its own copy (``{spider}.quarantined``: never removed by
  ``items_keep_days``), which may be the sound one.

Shipping runs at the end of each round in the worker (:class:`SegmentShipper`, after the item
store closed its segment), one worker of a spider per box at a time (a lock), for at most
``SHIP_PASS_SECONDS``. The dataset box ships nothing: its catalog reads its own segments.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from scraper.cluster.boxid import Box, BoxIdClash
from scraper.redis.connection import RedisLink, RedisUnavailable, as_text, get_link
from scraper.redis.defaults import SHIP_CHUNK_BYTES, SHIP_PASS_SECONDS, UPLOAD_TTL
from scraper.redis.keys import Keys
from scraper.utils.layout import DataLayout
from scraper.utils.pidlock import exclusive_or_skip
from scraper.utils.statefile import open_private, private_dirs, write_atomic

logger = logging.getLogger("scraper.cluster")

CLOSED_SUFFIXES = (".jsonl", ".jsonl.gz")
SHIPPED_SUFFIX = ".jsonl.gz"
QUARANTINED = "quarantined"
"""The word after a confirmation's segment name when the dataset box set the segment aside."""
SEPARATOR = "--"
"""Between the box that wrote a segment and the segment's name, in an entry and in the file the
dataset box writes; a segment's own name has single dashes only."""
_BOX_PART = r"[A-Za-z0-9._]+(?:-[A-Za-z0-9._]+)*"
ENTRY_RE = re.compile(rf"^(?P<spider>[a-z][a-z0-9_]*)/(?P<origin>{_BOX_PART}){SEPARATOR}"
                      rf"(?P<name>{_BOX_PART}\.jsonl\.gz)$")
"""An entry the drain accepts: a plain spider directory and file name, nothing that climbs out
of ``items/`` (anyone who can write to Redis can write an entry)."""

# Room under the cap is taken when an upload begins (its size on disk), so concurrent uploads of
# several boxes cannot pass the cap together; it is given back at the commit (which counts the
# segment instead) or, for an upload a killed box left, once its deadline passed.
_LAPSE = """
local now = tonumber(redis.call('TIME')[1])
local room = redis.call('HGETALL', KEYS[4])
for i = 1, #room, 2 do
  local size, deadline = string.match(room[i + 1], '^(%d+) (%d+)$')
  if room[i] == KEYS[3] or not deadline or tonumber(deadline) < now then
    redis.call('HDEL', KEYS[4], room[i])
    if tonumber(redis.call('DECRBY', KEYS[1], tonumber(size or '0'))) < 0 then
      redis.call('SET', KEYS[1], '0')
    end
  end
end
"""
# KEYS: bytes, seg, upload, reserved. ARGV: cap, size, ttl. 0: queued already; -1: over the
# cap; 1: go (the size reserved).
BEGIN = _LAPSE + """
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local held = tonumber(redis.call('GET', KEYS[1]) or '0')
if held > 0 and held + tonumber(ARGV[2]) > tonumber(ARGV[1]) then return -1 end
redis.call('INCRBY', KEYS[1], tonumber(ARGV[2]))
redis.call('HSET', KEYS[4], KEYS[3], ARGV[2] .. ' ' .. (now + tonumber(ARGV[3])))
redis.call('DEL', KEYS[3])
return 1
"""
# KEYS: bytes, seg, upload, queue, reserved. ARGV: entry, size, chunks, shipping box, its file.
# 1 committed, 0 queued already (by this box before a kill, or by another), -1 the upload is
# not whole or its reservation lapsed (begun again later).
COMMIT = """
local reserved = redis.call('HGET', KEYS[5], KEYS[3])
if not reserved then return -1 end
redis.call('HDEL', KEYS[5], KEYS[3])
local size = tonumber(string.match(reserved, '^(%d+)') or '0')
if tonumber(redis.call('DECRBY', KEYS[1], size)) < 0 then redis.call('SET', KEYS[1], '0') end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('DEL', KEYS[3]) return 0 end
if redis.call('HLEN', KEYS[3]) ~= tonumber(ARGV[3]) then return -1 end
redis.call('HSET', KEYS[3], 'size', ARGV[2], 'chunks', ARGV[3], 'from', ARGV[4], 'file', ARGV[5])
redis.call('RENAME', KEYS[3], KEYS[2])
redis.call('PERSIST', KEYS[2])
redis.call('INCRBY', KEYS[1], tonumber(ARGV[2]))
redis.call('RPUSH', KEYS[4], ARGV[1])
return 1
"""
# KEYS: bytes, seg, queue[, confirmations]. ARGV: entry[, confirmation]. The drain is done with
# an entry (its file is on the dataset box's disk): Redis forgets it and, in the same step, tells
# the box that shipped it (asked again: nothing more).
DONE = """
local size = 0
if redis.call('TYPE', KEYS[2]).ok == 'hash' then  -- anything else: another writer's, no count
  local declared = redis.call('HGET', KEYS[2], 'size') or ''
  if string.len(declared) <= 15 and string.match(declared, '^%d+$') then
    size = tonumber(declared)
  end
end
if redis.call('DEL', KEYS[2]) == 1 and size > 0 then
  if tonumber(redis.call('DECRBY', KEYS[1], size)) < 0 then redis.call('SET', KEYS[1], '0') end
end
if KEYS[4] then redis.call('RPUSH', KEYS[4], ARGV[2]) end
redis.call('LREM', KEYS[3], 0, ARGV[1])
return 1
"""


def chunk_field(index: int) -> str:
    return f"c{index}"


def dataset_box(client: Any, keys: Keys) -> dict[str, Any] | None:
    """The dataset box's record (``id``, ``name``, ``since``), or None while none is chosen."""
    raw = client.get(keys.dataset_box)
    if not raw:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    return record if isinstance(record, dict) and isinstance(record.get("id"), str) else None


def entry_name(spider: str, origin: str, file_name: str) -> str:
    """``{spider}/{origin}--{segment}.jsonl.gz``; a file received from another box
    (``{origin}--…``) keeps its origin."""
    if SEPARATOR in file_name:
        origin, file_name = file_name.split(SEPARATOR, 1)
    base = file_name.removesuffix(".gz")
    return f"{spider}/{origin}{SEPARATOR}{base}.gz"


class Ledger:
    """What this box shipped of a spider towards which dataset box, and what that box confirmed
    it wrote to its disk; survives ``kill -9`` (one name a line, appended and fsynced)."""

    def __init__(self, layout: DataLayout, spider: str) -> None:
        directory = layout.shipped_dir
        self.spider = spider
        self.path = directory / f"{spider}.list"
        self.confirmed_path = directory / f"{spider}.confirmed"
        self.quarantined_path = directory / f"{spider}.quarantined"
        self.target_path = directory / f"{spider}.to"
        self.directory = directory

    def names(self) -> set[str]:
        """Shipped (committed in Redis), by name without ``.gz``."""
        return _lines(self.path)

    def confirmed(self) -> set[str]:
        """Written to the dataset box's disk, by name without ``.gz``."""
        return _lines(self.confirmed_path)

    def quarantined(self) -> set[str]:
        """Of those confirmed, the ones it could not read and set aside."""
        return _lines(self.quarantined_path)

    def target(self) -> str:
        try:
            return self.target_path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return ""

    def aim(self, target: str) -> None:
        """Ship towards ``target`` from now on: what went while none was chosen went to it
        (it drains the queue), what went to another dataset box did not — start over. None
        chosen (``""``: not yet, or Redis lost the record) keeps the ledger as it is."""
        private_dirs(self.directory)
        current = self.target()
        if current == target or not target:
            return
        if current:
            for path in (self.path, self.confirmed_path, self.quarantined_path):
                write_atomic(path, "")
        write_atomic(self.target_path, target + "\n")

    def add(self, *names: str, confirmed: bool = False, quarantined: bool = False) -> None:
        if not names:
            return
        private_dirs(self.directory)
        path = (self.quarantined_path if quarantined else self.confirmed_path if confirmed
                else self.path)
        fd = open_private(path, os.O_RDWR | os.O_APPEND)
        try:
            end = os.fstat(fd).st_size
            torn = end > 0 and os.pread(fd, 1, end - 1) != b"\n"  # a kill mid-line, last time
            text = "".join(name.removesuffix(".gz") + "\n" for name in names)
            os.write(fd, ("\n" if torn else "").encode() + text.encode())
            os.fsync(fd)
        finally:
            os.close(fd)


    def keep(self, shipped: set[str], confirmed: set[str]) -> None:
        """Rewrite the ledger with these names only (atomically): the names of segments gone
        from the disk (``items_keep_days``) leave it, so it grows with what the box keeps."""
        quarantined = self.quarantined() & confirmed
        for path, names in ((self.path, shipped), (self.confirmed_path, confirmed),
                            (self.quarantined_path, quarantined)):
            write_atomic(path, "".join(name + "\n" for name in sorted(names)))


def _lines(path: Path) -> set[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return set()
    # A line cut by a kill is not a name: that segment is shipped (or confirmed) again.
    return {line.removesuffix(".gz") for line in text.split("\n")[:-1] if line}


def closed_segments(directory: Path) -> list[str]:
    """Closed item file names of ``directory``, sorted (never a ``.part`` or a ``.tmp``)."""
    try:
        with os.scandir(directory) as entries:
            return sorted(e.name for e in entries
                          if e.name.endswith(CLOSED_SUFFIXES) and e.is_file())
    except FileNotFoundError:
        return []


def compressed_chunks(path: Path, size: int = SHIP_CHUNK_BYTES) -> Iterator[bytes]:
    """The file as gzip, in pieces of about ``size`` bytes (a ``.gz`` file as it is)."""
    with open(path, "rb") as source:
        if path.name.endswith(".gz"):
            while piece := source.read(size):
                yield piece
            return
        packer = zlib.compressobj(6, zlib.DEFLATED, 31)  # 31: a gzip stream
        pending = b""
        while block := source.read(size):
            pending += packer.compress(block)
            while len(pending) >= size:
                yield pending[:size]
                pending = pending[size:]
        pending += packer.flush()
        while pending:
            yield pending[:size]
            pending = pending[size:]


@dataclass(slots=True)
class ShipResult:
    shipped: int = 0
    refused: int = 0  # Redis held the cap: left on disk for a later round
    unnamed: list[str] = field(default_factory=list)  # files no entry can name (renamed by hand)
    bytes: int = 0
    target: str | None = None  # the dataset box's id; None while none is chosen
    confirmed: int = 0  # the dataset box wrote them to its disk
    lost: int = 0  # gone from Redis unconfirmed (a Redis rollback or flush): shipped again
    set_aside: list[str] = field(default_factory=list)  # confirmed unreadable: quarantined


class Shipper:
    """Ships one spider's closed segments of this box (see the module docstring)."""

    def __init__(self, link: RedisLink, keys: Keys, layout: DataLayout, spider: str, *,
                 max_bytes: int, box: Box | None = None) -> None:
        self.link, self.keys, self.layout, self.spider = link, keys, layout, spider
        self.max_bytes = max_bytes
        self.box = box or Box.here(layout)
        self.ledger = Ledger(layout, spider)
        client = link.client
        self._begin = client.register_script(BEGIN)
        self._commit = client.register_script(COMMIT)

    def ship(self, deadline: float | None = None) -> ShipResult:
        """Ship what is not shipped yet (or was lost from Redis), oldest first, until refused or
        ``deadline`` (monotonic). Raises RedisUnavailable (the rest goes next time),
        :class:`BoxIdClash`, OSError (the ledger)."""
        result = ShipResult()
        client = self.link.client
        self.box.register(client, self.keys.dataset_ids)
        record = dataset_box(client, self.keys)
        result.target = record["id"] if record else None
        if result.target == self.box.id:  # the catalog here reads the segments in place
            self.ledger.aim(self.box.id)
            return result
        self.ledger.aim(result.target or "")
        directory = self.layout.items_dir(self.spider)
        closed = closed_segments(directory)
        done = self._settle(result, {name.removesuffix(".gz") for name in closed})
        for name in closed:
            if name.removesuffix(".gz") in done:
                continue
            if not ENTRY_RE.fullmatch(entry_name(self.spider, self.box.id, name)):
                result.unnamed.append(name)  # not a name this store writes: kept here only
                continue
            if deadline is not None and time.monotonic() > deadline:
                break
            outcome, size = self._ship_one(directory / name, name)
            if outcome == "gone":  # removed meanwhile (items_keep_days)
                continue
            if outcome == "refused":
                result.refused += 1
                break  # oldest first: the next one waits for room too
            if outcome == "incomplete":  # its reservation lapsed mid-upload: next round
                continue
            self.ledger.add(name)  # "queued": a kill had come before this line, last time
            result.shipped += 1
            result.bytes += size
        return result

    def _settle(self, result: ShipResult, on_disk: set[str]) -> set[str]:
        """The names not to ship again: shipped and either confirmed or still in Redis.

        The segments' keys are looked at before the confirmations are read: the drain deletes
        a key and confirms it in one step, so a key found gone here has its confirmation in the
        list read next — unless Redis lost both (a restart from an older snapshot, a failover,
        a flush), and then the segment is shipped again (the drain skips a file it has)."""
        client, keys = self.link.client, self.keys
        shipped, confirmed = self.ledger.names(), self.ledger.confirmed()
        if not shipped <= on_disk or not confirmed <= shipped:
            shipped &= on_disk
            confirmed &= shipped
            self.ledger.keep(shipped, confirmed)
        pending = sorted(shipped - confirmed)
        pipe = client.pipeline(transaction=False)
        for name in pending:
            pipe.exists(keys.dataset_segment(entry_name(self.spider, self.box.id, name)))
        held = pipe.execute() if pending else []
        gone = {name for name, there in zip(pending, held, strict=True) if not there}
        fresh = self._confirmations(result)
        result.confirmed = len(fresh)
        lost = gone - fresh
        result.lost = len(lost)
        return shipped - lost

    def _confirmations(self, result: ShipResult) -> set[str]:
        """Pop what the dataset box confirmed, recorded in the ledger before it leaves Redis;
        the names it set aside go to ``result.set_aside``."""
        client = self.link.client
        key = self.keys.dataset_confirmed(self.box.id, self.spider)
        raw = client.lrange(key, 0, -1)
        if not raw:
            return set()
        names, aside = set(), set()
        for line in raw:
            drainer, _, said = as_text(line).partition(" ")
            name, _, flag = said.partition(" ")
            target = result.target
            if name and (target is None or drainer == target):  # an old dataset box's: void
                names.add(name.removesuffix(".gz"))
                if flag == QUARANTINED:
                    aside.add(name.removesuffix(".gz"))
        self.ledger.add(*sorted(aside), quarantined=True)  # first: never removed as confirmed
        self.ledger.add(*sorted(names), confirmed=True)
        client.ltrim(key, len(raw), -1)
        result.set_aside = sorted(aside)
        return names

    def _ship_one(self, path: Path, name: str) -> tuple[str, int]:
        """``shipped`` (and the bytes), ``queued`` already, ``refused`` or ``gone``."""
        entry = entry_name(self.spider, self.box.id, name)
        k = self.keys
        seg, upload = k.dataset_segment(entry), k.dataset_upload(self.box.id, entry)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return "gone", 0
        begun = int(self._begin(keys=[k.dataset_bytes, seg, upload, k.dataset_reserved],
                                args=[self.max_bytes, size, UPLOAD_TTL]))
        if begun <= 0:
            return ("queued" if begun == 0 else "refused"), 0
        total = chunks = 0
        try:
            for piece in compressed_chunks(path):
                # HSET of one field: sent again after a lost answer, it writes nothing twice
                pipe = self.link.client.pipeline(transaction=True)
                pipe.hset(upload, chunk_field(chunks), piece)
                pipe.expire(upload, UPLOAD_TTL)
                pipe.execute()
                chunks += 1
                total += len(piece)
        except FileNotFoundError:
            return "gone", 0
        committed = int(self._commit(
            keys=[k.dataset_bytes, seg, upload, k.dataset_queue, k.dataset_reserved],
            args=[entry, total, chunks, self.box.id, name.removesuffix(".gz")]))
        if committed < 0:
            return "incomplete", 0
        return ("shipped" if committed else "queued"), total


def _news(path: Path, names: list[str]) -> bool:
    """Whether ``names`` differ from those said last time (kept in ``path``): said once, not at
    every round's end."""
    text = "".join(name + "\n" for name in sorted(names))
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (OSError, ValueError):
        pass
    with contextlib.suppress(OSError):  # unwritable: said again next time, better than never
        write_atomic(path, text)
    return True


class SegmentShipper:
    """The extension (Redis mode): at each round's end, ship this spider's closed segments."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.get("REDIS_URL") or not settings.getbool("ITEMSTORE_ENABLED"):
            raise NotConfigured("no REDIS_URL (one-machine mode) or no item store")
        self.crawler = crawler
        self.max_bytes = settings.getint("DISTRIBUTED_SHIP_MAX_BYTES")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SegmentShipper:
        extension = cls(crawler)
        # spider_closed comes after the item pipelines closed: the round's segment is closed.
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_closed(self) -> None:
        spider = self.crawler.spider
        assert spider is not None
        settings = self.crawler.settings
        layout = DataLayout.from_settings(settings)
        stats = self.crawler.stats
        assert stats is not None
        result = self._ship(settings, layout, spider.name)
        if result is None:
            return
        if result.shipped:
            stats.set_value("distributed/segments_shipped", result.shipped)
            logger.info("closed segments shipped to Redis for the cluster's dataset box: %d "
                        "(%d bytes, gzip)", result.shipped, result.bytes)
        if result.lost:
            stats.set_value("distributed/segments_lost_in_redis", result.lost)
            logger.warning("%d shipped segments left Redis before the dataset box confirmed "
                           "them (Redis restarted from an older snapshot, failed over or was "
                           "flushed): shipped again", result.lost)
        if result.set_aside:
            stats.set_value("distributed/segments_set_aside", len(result.set_aside))
            logger.warning("the dataset box could not read %d shipped segments (%s) and set "
                           "them aside in its quarantine/ (its why.log says why): they are "
                           "not shipped again, and kept here (never removed by "
                           "items_keep_days)", len(result.set_aside),
                           ", ".join(result.set_aside[:3]))
        if result.unnamed and _news(layout.shipped_dir / f"{spider.name}.unnamed",
                                    result.unnamed):
            logger.info("not shipped to the dataset box, their names are not segment names "
                        "(%s…): rename them {spider}-{i}of{N}-{stamp}.jsonl to ship them",
                        ", ".join(result.unnamed[:3]))
        if result.refused:
            stats.set_value("distributed/segments_refused", result.refused)
            logger.info("Redis holds DISTRIBUTED_SHIP_MAX_BYTES (%d) of segments the dataset "
                        "box has not drained yet: the rest stay here and go later",
                        self.max_bytes)

    def _ship(self, settings: Any, layout: DataLayout, spider: str) -> ShipResult | None:
        """One pass; None after one line saying why nothing (more) went this time."""
        import redis

        try:
            private_dirs(layout.shipped_dir)
            with exclusive_or_skip(layout.shipped_dir / f"{spider}.lock") as mine:
                if not mine:  # another worker of this spider ships this box's segments
                    return None
                shipper = Shipper(get_link(settings["REDIS_URL"]), Keys.from_settings(settings),
                                  layout, spider, max_bytes=self.max_bytes)
                return shipper.ship(time.monotonic() + SHIP_PASS_SECONDS)
        except RedisUnavailable:
            return None  # the link logged it once; the segments go at a later round's end
        except BoxIdClash as exc:
            logger.error("segments not shipped: %s", exc)
        except OSError as exc:
            logger.error("segments not shipped: %s: %s (the state dir must be writable, with "
                         "room): they go at a later round's end", exc.filename or
                         layout.shipped_dir, exc.strerror or exc)
        except redis.exceptions.RedisError as exc:
            logger.error("segments not shipped: Redis answered %s: %s; they go at a later "
                         "round's end", type(exc).__name__, exc)
        return None
