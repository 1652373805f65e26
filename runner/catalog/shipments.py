"""One shipped segment out of Redis, onto the dataset box's disk, or into ``quarantine/``.

Anyone who can write to Redis can write a segment's key, and a box of another version, a
failing disk or a bug can write a bad one; the drain takes nothing on trust:

* **Its fields** are read only once their lengths are known to be a field's (``size``,
  ``chunks``, ``from``, ``file``: a number, an id, a name), and must be what an upload writes:
  ``chunks`` a count matching the hash, ``size`` a byte count.
* **Each chunk** is checked against the declared size before it is read (``HSTRLEN``): none
  above :data:`CHUNK_MAX_BYTES`, never more in all than ``size``. A 300 MB chunk is never
  fetched whole (it took the drain to 995 MB).
* **The gzip** is read through once before the file enters ``items/``
  (:func:`runner.catalog.segmentread.check_segment`): not gzip, truncated, a bad CRC, not UTF-8.

A segment that fails any of these is :class:`UnreadableShipment`; :func:`keep` writes what Redis
holds of it - its chunks in order, a large one streamed off the socket a block at a time - under
``quarantine/``, and the drain goes on with the next.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from runner.catalog.segmentread import UnreadableSegment, check_segment
from scraper.cluster.shipping import chunk_field
from scraper.redis.defaults import SHIP_CHUNK_BYTES
from scraper.utils.layout import DataLayout
from scraper.utils.quarantine import set_aside

FIELDS = ("size", "chunks", "from", "file")
"""What the commit writes beside the chunks (scraper/cluster/shipping.py's COMMIT)."""
FIELD_MAX_BYTES = 256
"""Longer than any field an upload writes: a longer one is not read."""
CHUNK_MAX_BYTES = 4 * SHIP_CHUNK_BYTES
"""A chunk above this is not read as one: a box uploads SHIP_CHUNK_BYTES (a box of another
version may upload more), the drain holds one chunk at a time, and reads it within the
catalog's Redis timeout (SOCKET_TIMEOUT, 2 s), which a far larger one would miss at every run."""
STREAM_BLOCK = 1024 * 1024
"""Bytes read at a time of a chunk too large to hold, kept in ``quarantine/``."""
_CHUNK_NAME = re.compile(rb"c(\d{1,9})")
_DIGITS = re.compile(rb"\d{1,18}")

TEMP_PREFIX = "."
TEMP_SUFFIX = ".drain"
"""A segment being received: hidden and without a closed suffix, so nothing else reads it."""


class EntryGone(Exception):
    """The entry's data left Redis before it was read whole: another drain took it."""


class UnreadableShipment(Exception):
    """A shipped segment the drain cannot take; ``shipper`` and ``file`` as far as its fields
    say them (None when they do not), to tell its box it was set aside."""

    def __init__(self, why: str, shipper: str | None = None, file: str | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.shipper = shipper
        self.file = file


@dataclass(frozen=True, slots=True)
class Declared:
    """A shipped segment's fields, as its upload wrote them."""

    size: int
    chunks: int
    shipper: str
    file: str


def read_fields(client: Any, seg: str) -> Declared:
    """The segment's fields, checked; :class:`EntryGone`, :class:`UnreadableShipment`. A
    segment of a version before the drain's confirmations has no ``from`` and ``file``
    (``""`` here: nobody to tell)."""
    kind = _text(_bytes(client.type(seg)))
    if kind == "none":
        raise EntryGone(seg)
    if kind != "hash":
        raise UnreadableShipment(f"its key holds a {kind}, not the hash an upload writes")
    pipe = client.pipeline(transaction=False)
    pipe.hlen(seg)
    for name in FIELDS:
        pipe.hstrlen(seg, name)
    count, *lengths = pipe.execute()
    values: dict[str, bytes | None] = dict.fromkeys(FIELDS)
    readable = [name for name, length in zip(FIELDS, lengths, strict=True)
                if length <= FIELD_MAX_BYTES]
    values.update(zip(readable, client.hmget(seg, readable), strict=True))
    shipper, file = (_text(values[name]) for name in ("from", "file"))
    for name, length in zip(FIELDS, lengths, strict=True):
        if length > FIELD_MAX_BYTES:
            raise UnreadableShipment(f"its field {name} holds {length:,} bytes, not what an "
                                     "upload writes", shipper, file)
    size, chunks = (_count(values[name]) for name in ("size", "chunks"))
    if chunks is None or chunks < 1:
        raise UnreadableShipment(f"its field chunks is {_shown(values['chunks'])}, not a count "
                                 "of chunks", shipper, file)
    if size is None:
        raise UnreadableShipment(f"its field size is {_shown(values['size'])}, not a count of "
                                 "bytes", shipper, file)
    named = sum(1 for value in values.values() if value is not None)
    if count != chunks + named:
        raise UnreadableShipment(f"it holds {count - named:,} chunk fields where it declares "
                                 f"{chunks:,}", shipper, file)
    for name, text in (("from", shipper), ("file", file)):
        if text is None and values[name] is not None:
            raise UnreadableShipment(f"its field {name} is not ASCII text", shipper, file)
    return Declared(size, chunks, shipper or "", file or "")


def receive(client: Any, seg: str, declared: Declared, target: Path) -> int:
    """Write the segment at ``target`` atomically, each chunk checked before it is read and the
    whole file before it is renamed into place; its bytes."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f"{TEMP_PREFIX}{target.name}.{os.getpid()}{TEMP_SUFFIX}")
    size = 0
    why = (declared.shipper, declared.file)
    try:
        with open(temporary, "wb") as handle:
            for index in range(declared.chunks):
                name = chunk_field(index)
                length = client.hstrlen(seg, name)
                if length > CHUNK_MAX_BYTES:
                    raise UnreadableShipment(f"its chunk {name} holds {length:,} bytes, more "
                                             f"than the {CHUNK_MAX_BYTES:,} a chunk may hold",
                                             *why)
                if size + length > declared.size:
                    raise UnreadableShipment(f"its chunks hold more than the {declared.size:,} "
                                             "bytes it declares", *why)
                piece = client.hget(seg, name)
                if piece is None:
                    if not client.exists(seg):
                        raise EntryGone(seg)
                    raise UnreadableShipment(f"its chunk {name} is missing", *why)
                handle.write(piece)
                size += len(piece)
            if size != declared.size:
                raise UnreadableShipment(f"its chunks hold {size:,} bytes where it declares "
                                         f"{declared.size:,}", *why)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            check_segment(temporary, gzipped=True)
        except UnreadableSegment as exc:
            raise UnreadableShipment(exc.why, *why) from None
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename itself survives a power cut before Redis forgets the entry
    finally:
        os.close(fd)
    return size


def keep(client: Any, seg: str, layout: DataLayout, entry: str, why: str) -> Path:
    """What Redis holds of an unreadable segment - its chunk fields in their order, none held
    whole (a string key's bytes; nothing of another type) - set aside under
    ``quarantine/shipped/``."""
    target = layout.quarantined_shipment(entry)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f"{TEMP_PREFIX}{target.name}.{os.getpid()}{TEMP_SUFFIX}")
    kind = _text(_bytes(client.type(seg)))
    try:
        with open(temporary, "wb") as handle:
            if kind == "hash":
                _write_chunks(client, seg, handle)
            elif kind == "string":
                for start in range(0, client.strlen(seg), STREAM_BLOCK):
                    handle.write(client.getrange(seg, start, start + STREAM_BLOCK - 1))
            handle.flush()
            os.fsync(handle.fileno())
        return set_aside(layout, temporary, target, why)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _write_chunks(client: Any, seg: str, handle: BinaryIO) -> None:
    indexes = sorted(int(match[1]) for name in client.hkeys(seg)  # names only, never values
                     if (match := _CHUNK_NAME.fullmatch(_bytes(name))))
    for index in indexes:
        name = chunk_field(index)
        if client.hstrlen(seg, name) <= CHUNK_MAX_BYTES:
            handle.write(client.hget(seg, name) or b"")
        else:
            stream_field(client, seg, name, handle)


def stream_field(client: Any, key: str, name: str, handle: BinaryIO) -> int:
    """``HGET key name`` written to ``handle`` as its reply arrives, :data:`STREAM_BLOCK` bytes
    at a time, and its length. redis-py reads a reply whole, and Redis cuts no range of a hash
    field (a Lua ``string.sub`` of a 320 MB one took 3 s a slice): the reply is read off the
    connection's socket, which holds nothing else once the command is sent (no health check,
    RESP2)."""
    import redis

    pool = client.connection_pool
    connection = pool.get_connection()
    try:
        connection.send_command("HGET", key, name, check_health=False)
        sock = connection._sock  # see the docstring
        header = b""
        while not header.endswith(b"\r\n"):
            byte = sock.recv(1)
            if not byte or len(header) > 24:
                raise redis.exceptions.ConnectionError(f"reply to HGET cut at {header!r}")
            header += byte
        if not header.startswith(b"$"):
            raise redis.exceptions.ResponseError(header.decode("utf-8", "replace").strip())
        length = int(header[1:-2])
        if length < 0:
            return 0  # no such field
        left, wanted = length + 2, length  # the bytes, then their CRLF
        while left:
            block = sock.recv(min(STREAM_BLOCK, left))
            if not block:
                raise redis.exceptions.ConnectionError("reply to HGET cut short")
            left -= len(block)
            handle.write(block[:wanted])
            wanted -= min(wanted, len(block))
        return length
    except BaseException:
        connection.disconnect()  # a reply half read: the connection is not reused
        raise
    finally:
        pool.release(connection)


def remove_stale(directory: Path) -> None:
    """What a killed drain left in ``directory`` (a received segment never renamed)."""
    for stale in directory.glob(f"{TEMP_PREFIX}*{TEMP_SUFFIX}"):
        stale.unlink(missing_ok=True)


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def _text(value: bytes | None) -> str | None:
    if value is None:
        return None
    try:
        return value.decode("ascii")
    except UnicodeDecodeError:
        return None


def _count(value: bytes | None) -> int | None:
    return int(value) if value is not None and _DIGITS.fullmatch(value) else None


def _shown(value: bytes | None) -> str:
    return "missing" if value is None else repr(value.decode("utf-8", "replace")[:40])
