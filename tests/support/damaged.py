"""Item segments no reader can read, as a failing disk, a half-finished copy or a tool leaves
them, and the good search lines around them."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

GOOD = {"spider": "search", "shard": "0/1", "collected_at": "2026-11-29T15:01:02Z",
        "full_name": "o/r", "stargazers_count": 3}


def search_lines(first_id: int, count: int = 3) -> bytes:
    """``count`` search items with ids from ``first_id``, one JSON line each."""
    return b"".join((json.dumps({**GOOD, "id": n, "full_name": f"o/r{n}"}) + "\n").encode()
                    for n in range(first_id, first_id + count))


def truncated(data: bytes) -> bytes:
    return gzip.compress(data)[:-9]  # the trailer and a byte of the stream gone


def not_gzip(data: bytes) -> bytes:
    return data  # a .gz name on plain text


def bad_crc(data: bytes) -> bytes:
    packed = bytearray(gzip.compress(data))
    packed[-8] ^= 0x01  # the CRC32 of the trailer: the stream decompresses, the check fails
    return bytes(packed)


def not_utf8(data: bytes) -> bytes:
    return gzip.compress(data + b'{"spider": "search", "description": "caf\xe9"}\n')  # Latin-1


DAMAGES: dict[str, Callable[[bytes], bytes]] = {
    "truncated": truncated, "not gzip": not_gzip, "bad CRC": bad_crc, "not UTF-8": not_utf8}
"""Each kind of damage, applied to a segment's plain lines: the bytes of a ``.jsonl.gz``. The
one line the catalog says of each names it in these words."""


def write_damaged_dir(directory: Path) -> tuple[dict[str, Path], set[int]]:
    """A good segment before and after each damaged one (sorted by name, as the catalog loads
    them): the damaged files by kind, and the ids of every good line."""
    directory.mkdir(parents=True, exist_ok=True)
    damaged, good = {}, set()
    stamp = 0
    for kind, damage in DAMAGES.items():
        for role in ("good", kind):
            stamp += 1
            first = stamp * 10
            name = f"search-0of1-202611{stamp:02d}T150102Z.jsonl.gz"
            data = search_lines(first)
            if role == "good":
                (directory / name).write_bytes(gzip.compress(data))
                good |= set(range(first, first + 3))
            else:
                (directory / name).write_bytes(damage(data))
                damaged[kind] = directory / name
    stamp += 1
    last = directory / f"search-0of1-202611{stamp:02d}T150102Z.jsonl"
    last.write_bytes(search_lines(stamp * 10))
    good |= set(range(stamp * 10, stamp * 10 + 3))
    return damaged, good
