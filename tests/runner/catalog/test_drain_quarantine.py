"""No shipped segment stops the cluster's dataset: the drain reads nothing on trust, sets an
unreadable one aside under ``quarantine/shipped/`` with one line, drains every other, and tells
the box that shipped it, which ships it no more and keeps its own copy. A real Redis, the
project's shipper and drain in this process."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.catalog.gather import choose, drain, remove_confirmed_segments
from runner.catalog.shipments import CHUNK_MAX_BYTES
from scraper.redis.keys import Keys
from scraper.utils.quarantine import count_quarantined
from tests.support.cluster import shipping_box
from tests.support.damaged import search_lines

BIG = CHUNK_MAX_BYTES + 1024 * 1024  # a chunk the drain does not hold whole


def _chunk(client: Any, seg: str, data: bytes) -> None:
    client.hset(seg, mapping={"c0": data, "size": len(data)})


Tamper = Callable[[Any, str], None]
TAMPERS: dict[str, tuple[Tamper, str]] = {
    # what is done to the entry in Redis, and what the drain's line says of it
    "chunks abc": (lambda c, seg: c.hset(seg, "chunks", "abc"), "its field chunks is 'abc'"),
    "size 12e3": (lambda c, seg: c.hset(seg, "size", "12e3"), "its field size is '12e3'"),
    "not gzip": (lambda c, seg: _chunk(c, seg, search_lines(1)), "not gzip"),
    "truncated": (lambda c, seg: _chunk(c, seg, gzip.compress(search_lines(1))[:-9]),
                  "truncated"),
    "bad CRC": (lambda c, seg: _chunk(c, seg, gzip.compress(search_lines(1))[:-8]
                                      + b"\0\0\0\0" + gzip.compress(search_lines(1))[-4:]),
                "bad CRC"),
    "not UTF-8": (lambda c, seg: _chunk(c, seg, gzip.compress(b'{"d": "caf\xe9"}\n')),
                  "not UTF-8"),
    "from not UTF-8": (lambda c, seg: c.hset(seg, "from", b"\xff\xfe"),
                       "its field from is not ASCII text"),
    "chunk past size": (lambda c, seg: c.hset(seg, "c0", c.hget(seg, "c0") + b"zz"),
                        "its chunks hold more than the"),
    "huge chunk": (lambda c, seg: _chunk(c, seg, b"x" * BIG),
                   f"holds {BIG:,} bytes, more than the {CHUNK_MAX_BYTES:,} a chunk may hold"),
    "not a hash": (lambda c, seg: (c.delete(seg), c.set(seg, b"hello")),
                   "its key holds a string"),
}
NO_WORD_BACK = {"from not UTF-8", "not a hash"}
"""Their fields do not say which box shipped them: nobody is told, their box ships them again."""


def test_each_unreadable_shipment_is_set_aside_and_every_other_drains(
        tmp_path: Path, redis_url: str, redis_server: Any) -> None:
    client, keys = redis_server.client(), Keys()
    a, b = (shipping_box(tmp_path, name, redis_url, spider="search") for name in "ab")
    choose(a["link"].client, keys, a["box"], take_over=False, scheduled=False)
    directory = b["layout"].items_dir("search")
    directory.mkdir(parents=True)
    names = [f"search-0of1-202611{k:02d}T000000Z.jsonl.gz" for k in range(2 * len(TAMPERS) + 1)]
    for k, name in enumerate(names):  # compressed: items_keep_days removes only those
        (directory / name).write_bytes(gzip.compress(search_lines(10 * k)))
    assert b["shipper"].ship().shipped == len(names)
    entries = [f"search/b--{name}" for name in names]
    tampered = dict(zip(entries[1::2], TAMPERS, strict=True))  # a good one before and after each
    for entry, kind in tampered.items():
        TAMPERS[kind][0](client, keys.dataset_segment(entry))
    held = {entry: b"hello" if kind == "not a hash" else
            client.hget(keys.dataset_segment(entry), "c0") for entry, kind in tampered.items()}

    said: list[str] = []
    result = drain(client, keys, a["layout"], a["box"], lambda rel: False, said.append)

    assert (result.received, result.quarantined) == (len(names) - len(TAMPERS), len(TAMPERS))
    assert len(said) == len(TAMPERS), said
    for entry, kind in tampered.items():
        (line,) = [line for line in said if f": {entry}: " in line]
        assert TAMPERS[kind][1] in line and "set aside" in line, (kind, line)
        assert a["layout"].quarantined_shipment(entry).read_bytes() == held[entry], kind
    good = [entry for entry in entries if entry not in tampered]
    assert {path.name for path in a["layout"].items_dir("search").iterdir()} == {
        entry.split("/")[1] for entry in good}
    for entry, name in zip(entries, names, strict=True):
        if entry in good:
            assert (a["layout"].items_root / entry).read_bytes() == \
                (directory / name).read_bytes()
    assert client.llen(keys.dataset_queue) == 0
    assert not list(client.scan_iter(keys.dataset_segment("*")))
    assert count_quarantined(a["layout"]) == len(TAMPERS)
    assert len(a["layout"].quarantine_log.read_text().splitlines()) == len(TAMPERS)

    # Told, the box ships those no more; the two whose fields named nobody are shipped again
    # from its sound copy and drain.
    again = b["shipper"].ship()
    told = sorted(entry.split("--")[1].removesuffix(".gz") for entry, kind in tampered.items()
                  if kind not in NO_WORD_BACK)
    assert again.set_aside == told
    assert again.shipped == len(NO_WORD_BACK)
    second = drain(client, keys, a["layout"], a["box"], lambda rel: False, said.append)
    assert (second.received, second.quarantined) == (len(NO_WORD_BACK), 0)
    assert b["shipper"].ship().shipped == 0

    # items_keep_days on the box removes what the dataset box has, never what it set aside.
    removed = remove_confirmed_segments(b["layout"], keep_days=1, now=4e9)
    assert removed == len(names) - len(told)
    assert sorted(path.name.removesuffix(".gz") for path in directory.iterdir()) == told


def test_a_chunk_is_measured_before_it_is_read(tmp_path: Path, redis_url: str,
                                               redis_server: Any) -> None:
    """The drain asks each chunk's length (HSTRLEN) before it asks its bytes: a huge chunk is
    never fetched as one reply; to keep it, it is streamed off the socket."""
    client, keys = redis_server.client(), Keys()
    a, b = (shipping_box(tmp_path, name, redis_url, spider="search") for name in "ab")
    choose(a["link"].client, keys, a["box"], take_over=False, scheduled=False)
    directory = b["layout"].items_dir("search")
    directory.mkdir(parents=True)
    (directory / "search-0of1-20261101T000000Z.jsonl").write_bytes(search_lines(1))
    b["shipper"].ship()
    seg = keys.dataset_segment("search/b--search-0of1-20261101T000000Z.jsonl.gz")
    _chunk(client, seg, b"x" * BIG)
    asked: list[tuple[str, ...]] = []
    real = client.execute_command

    def watched(*args: Any, **options: Any) -> Any:
        reply = real(*args, **options)
        asked.append(tuple(str(arg) for arg in args[:2]))
        if isinstance(reply, bytes):
            assert len(reply) <= CHUNK_MAX_BYTES, args[:2]
        return reply

    client.execute_command = watched
    drain(client, keys, a["layout"], a["box"], lambda rel: False, lambda line: None)
    assert ("HSTRLEN", seg) in asked
    kept = a["layout"].quarantined_shipment("search/b--search-0of1-20261101T000000Z.jsonl.gz")
    assert kept.read_bytes() == b"x" * BIG
