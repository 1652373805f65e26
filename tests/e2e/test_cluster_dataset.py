"""One dataset for the cluster: boxes ship their closed segments to Redis (bounded in bytes), the
dataset box drains them into its ``items/`` and builds the catalog of every box's items, once.

The rules run in-process against a real Redis (the project's shipper and drain); three real
runners and ``python -m runner catalog`` show it end to end.
"""

from __future__ import annotations

import collections
import gzip
import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import (
    configure_docs,
    finish,
    hold_site_until_all_joined,
    machines,
    runner_in_process,
    start_runners,
)
from tests.support.collector import Collector

pytestmark = pytest.mark.timeout(150)

SEGMENT_LINES = 400


class Killed(BaseException):
    """A kill -9 at that instant: nothing after it runs."""


def box(tmp_path: Path, name: str, url: str, cap: int = 1 << 30) -> dict[str, Any]:
    from scraper.cluster.shipping import Box, Shipper
    from scraper.redis.connection import RedisLink
    from scraper.redis.keys import Keys
    from scraper.utils.layout import DataLayout

    layout = DataLayout(tmp_path / name)
    identity = Box(name, f"host:{layout.root}")
    link = RedisLink(url)
    return {"layout": layout, "box": identity, "link": link,
            "shipper": Shipper(link, Keys(), layout, "docs", max_bytes=cap, box=identity)}


def write_segments(layout: Any, count: int, seed: int) -> dict[str, bytes]:
    """Closed segments (random text: gzip keeps them near their size), and what must never
    ship: the open ``.part`` and a compression a kill left half done."""
    rng = random.Random(seed)
    directory = layout.items_dir("docs")
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    for k in range(count):
        lines = [json.dumps({"spider": "docs", "url": f"http://h/{seed}/{k}/{n}",
                             "text": f"{rng.getrandbits(120):030x}"})
                 for n in range(SEGMENT_LINES)]
        name = f"docs-0of1-2026010{k}T000000Z.jsonl"
        written[name] = ("\n".join(lines) + "\n").encode()
        (directory / name).write_bytes(written[name])
    (directory / "docs-0of1-20260109T000000Z.jsonl.part").write_text('{"open": 1}\n')
    (directory / "docs-0of1-20260108T000000Z.jsonl.gz.tmp").write_bytes(b"\x1f\x8b")
    return written


def received(layout: Any) -> dict[str, bytes]:
    """The files drained into ``items/docs/``, uncompressed, by name."""
    return {p.name: gzip.decompress(p.read_bytes())
            for p in sorted(layout.items_dir("docs").glob("*--*.jsonl.gz"))}


def drain_into(target: dict[str, Any]) -> Any:
    from runner.catalog.gather import drain
    from scraper.redis.keys import Keys

    return drain(target["link"].client, Keys(), target["layout"], target["box"],
                 lambda rel: False, warn=print)


def redis_holds(client: Any) -> tuple[int, int, list[bytes]]:
    return (int(client.get("hubcollect:dataset:bytes") or 0),
            client.llen("hubcollect:dataset:queue"),
            sorted(client.scan_iter("hubcollect:dataset:seg:*")))


def claim(target: dict[str, Any], take_over: bool = False) -> Any:
    from runner.catalog.gather import choose
    from scraper.redis.keys import Keys

    return choose(target["link"].client, Keys(), target["box"], take_over=take_over,
                  scheduled=False)


def test_shipped_segments_stay_bounded_until_drained_and_arrive_once(
        tmp_path: Path, redis_url: str, redis_server: Any) -> None:
    client = redis_server.client()
    size = len(write_segments(box(tmp_path, "probe", redis_url)["layout"], 1, 0)[
        "docs-0of1-20260100T000000Z.jsonl"])
    cap = int(size * 1.2)  # room for one segment (gzip keeps random text above half its size)
    b = box(tmp_path, "b", redis_url, cap)
    segments = write_segments(b["layout"], 3, 1)
    a = box(tmp_path, "a", redis_url)

    (b["layout"].items_dir("docs") / "a copy.jsonl").write_text("{}\n")  # no segment's name
    # The dataset box is down (none chosen yet): B ships up to the cap, the rest stays on disk.
    first = b["shipper"].ship()
    assert first.unnamed == ["a copy.jsonl"]
    held, queued, _ = redis_holds(client)
    assert (first.shipped, first.refused, queued) == (1, 1, 1)
    assert 0 < held <= cap
    assert b["shipper"].ship().shipped == 0  # still full: nothing more, nothing twice
    assert redis_holds(client)[0] == held

    # A becomes the dataset box and drains: the shipped one lands, Redis is empty again; then
    # the rest, a segment per round's end.
    assert claim(a)[0]["id"] == "a"
    result = drain_into(a)
    assert (result.received, result.boxes) == (1, {"b"})
    assert redis_holds(client) == (0, 0, [])
    assert not list(client.scan_iter("hubcollect:dataset:upload:*"))
    for refused in (1, 0):
        rest = b["shipper"].ship()
        assert (rest.shipped, rest.refused) == (1, refused)
        assert redis_holds(client)[0] <= cap
        drain_into(a)
    # Every closed segment once, whole, under its box's name; never the open one or a .tmp.
    assert received(a["layout"]) == {f"b--{name}.gz": data for name, data in segments.items()}
    assert redis_holds(client) == (0, 0, [])
    # The ledger is on disk: a fresh shipper (a restarted worker) ships nothing again.
    fresh = box(tmp_path, "b", redis_url, cap)["shipper"]
    assert fresh.ship().shipped == 0 and redis_holds(client)[1] == 0


def test_a_kill_of_the_shipper_or_the_drain_at_any_step_loses_and_duplicates_nothing(
        tmp_path: Path, redis_url: str, redis_server: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import runner.catalog.gather as gather
    import runner.catalog.shipments as shipments

    client = redis_server.client()
    a, b = box(tmp_path, "a", redis_url), box(tmp_path, "b", redis_url)
    segments = write_segments(b["layout"], 3, 2)
    claim(a)

    # The shipper killed between the commit and its ledger line: shipped again, drained once.
    ledger = b["layout"].state_dir / "shipped" / "docs.list"
    b["shipper"].ship()
    lines = ledger.read_text().splitlines()
    ledger.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:5])  # the last line torn
    assert b["shipper"].ship().shipped == 1  # queued already: its line written, no new entry
    assert redis_holds(client)[1] == 3

    # The drain killed mid-segment, then after the rename but before Redis forgot the entry.
    real_receive, real_replace = gather.receive, shipments.os.replace

    def killed_mid_write(source: Any, destination: Any) -> None:
        raise Killed

    monkeypatch.setattr(shipments.os, "replace", killed_mid_write)
    with pytest.raises(Killed):
        drain_into(a)
    monkeypatch.setattr(shipments.os, "replace", real_replace)
    assert received(a["layout"]) == {} and redis_holds(client)[1] == 3
    stale = a["layout"].items_dir("docs") / ".b--docs-0of1-20260100T000000Z.jsonl.gz.77.drain"
    stale.write_bytes(b"\x1f\x8b")  # what a kill -9 mid-write leaves (no cleanup runs then)

    def killed_after_rename(*args: Any) -> Any:
        real_receive(*args)
        raise Killed

    monkeypatch.setattr(gather, "receive", killed_after_rename)
    with pytest.raises(Killed):
        drain_into(a)
    monkeypatch.setattr(gather, "receive", real_receive)
    assert len(received(a["layout"])) == 1 and redis_holds(client)[1] == 3

    # The drain after the kills: each segment once, Redis empty, no temporary file left.
    # Shipped again from a lost ledger (a kill before its line): the file is here, skipped.
    ledger.unlink()
    (b["layout"].state_dir / "shipped" / "docs.to").unlink()
    assert b["shipper"].ship().shipped == 3  # one queued already, two after the drain
    result = drain_into(a)
    assert (result.received, result.skipped) == (2, 1)
    assert b["shipper"].ship().shipped == 0
    b["shipper"].ledger.path.unlink()  # lost once more, after the drain: every file is here
    b["shipper"].ship()
    assert drain_into(a).skipped == 3
    assert received(a["layout"]) == {f"b--{name}.gz": data for name, data in segments.items()}
    assert redis_holds(client) == (0, 0, [])
    assert not list(a["layout"].items_dir("docs").glob(".*"))


def test_a_take_over_brings_every_box_s_segments_to_the_new_dataset_box(
        tmp_path: Path, redis_url: str, redis_server: Any) -> None:
    a, b, c = (box(tmp_path, name, redis_url) for name in "abc")
    own = {name: write_segments(target["layout"], 2, seed)
           for seed, (name, target) in enumerate((("a", a), ("b", b), ("c", c)))}
    claim(a)
    for target in (b, c):
        target["shipper"].ship()
    drain_into(a)
    assert len(received(a["layout"])) == 4  # b's and c's

    current, replaced = claim(b, take_over=True)
    assert current["id"] == "b" and replaced["id"] == "a"
    for target in (a, c):  # the old dataset box ships its own and what it received
        target["shipper"].ship()
    assert b["shipper"].ship().shipped == 0  # the dataset box ships nothing
    result = drain_into(b)
    # a's own and c's (from a and from c: once), none of b's own back to it
    expected = {f"{origin}--{name}.gz": data for origin in "ac"
                for name, data in own[origin].items()}
    assert received(b["layout"]) == expected, sorted(received(b["layout"]))
    assert (result.received, result.skipped) == (4, 2)  # b's own came back from a: skipped
    assert redis_holds(redis_server.client()) == (0, 0, [])


# --- end to end --------------------------------------------------------------------------------


def lines_of(collector: Collector) -> collections.Counter[str]:
    """Every item line a box wrote (its closed segments)."""
    return collections.Counter(line for path in collector.item_files("docs")
                               for line in path.read_text(encoding="utf-8").splitlines())


@pytest.mark.timeout(300)
def test_three_boxes_one_catalog_every_item_once(
        tmp_path: Path, redis_server: Any, redis_url: str, fake_docs_factory: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    docs = fake_docs_factory(sites=3, pages=12)
    boxes = machines(tmp_path, 3)
    for collector in boxes:
        # Requests sent while the site is held wait for it, not time out and go again.
        configure_docs(collector, docs, settings={"DOWNLOAD_TIMEOUT": 150})
    procs = start_runners(boxes, redis_url, "docs", workers=1)
    hold_site_until_all_joined(docs, redis_server.client(), procs, workers=1)
    results = finish(procs)
    assert [rc for rc, _ in results] == [0, 0, 0], results
    written = [lines_of(collector) for collector in boxes]
    assert sum(1 for counts in written if counts) >= 2  # the work was shared
    every = sum(written, collections.Counter())
    assert max(every.values()) == 1  # the content hashes: no line twice in the cluster

    logs = "".join(collector.log("docs") for collector in boxes)
    assert "closed segments shipped to Redis" in logs
    assert " ERROR: " not in logs and "Traceback" not in logs
    for collector in boxes:
        collector.update_config({"redis_url": redis_url})
    built = boxes[0].runner("catalog", timeout=60)
    assert built.returncode == 0, built.stderr
    assert "catalog: received" in built.stdout, built.stdout
    conn = sqlite3.connect(boxes[0].data_dir / "catalog.sqlite")
    loaded = [path for path, in conn.execute("SELECT path FROM loaded_files")]
    files = sum(len(c.item_files("docs")) for c in boxes)
    assert len(loaded) == len(set(loaded)) == files  # each box's segments, once
    pages = {(url, digest) for url, digest in conn.execute(
        "SELECT url, content_hash FROM docs_versions")}
    items = [json.loads(line) for line in every]
    assert pages == {(i["url"], i["content_hash"]) for i in items}
    assert conn.execute("SELECT sum(items) FROM items_per_hour").fetchone()[0] == len(items)
    # The user's command was a real process above; the same code in this process after.
    code, again = runner_in_process(boxes[0], capsys, "catalog")
    assert code == 0 and "catalog: 0 new files" in again, again

    code, other = runner_in_process(boxes[1], capsys, "catalog")
    assert code == 0 and other.count("\n") == 1, other
    assert str(boxes[0].data_dir.resolve()) in other and "--take-over" in other
    assert not (boxes[1].data_dir / "catalog.sqlite").exists()
    assert redis_url.split("//")[1] not in built.stdout + other  # no URL, no secret


def test_the_dataset_box_is_where_catalog_first_ran_by_hand(
        tmp_path: Path, redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from runner.catalog.access import existing_catalog
    from runner.catalog.gather import gather
    from scraper.config.collector import CollectorConfig
    from scraper.utils.layout import DataLayout

    def run(name: str, url: str = redis_url, **flags: bool) -> tuple[bool, list[str]]:
        said: list[str] = []
        config = CollectorConfig(data_dir=tmp_path / name, redis_url=url)
        here = gather(config, DataLayout(config.data_dir), take_over=flags.get("take_over", False),
                      scheduled=flags.get("scheduled", False), say=said.append,
                      warn=said.append)
        return here, said

    # The runner's periodic build chooses no box: the dataset goes where the user asks first.
    here, said = run("a", scheduled=True)
    assert not here and said == [said[0]] and "no box builds the cluster's dataset" in said[0]
    assert run("b")[0]  # by hand on b: b is the dataset box
    assert run("b", scheduled=True)[0]  # and its runner's builds drain and build there
    here, said = run("a")
    assert not here and len(said) == 1
    assert f":{(tmp_path / 'b').resolve()}, where this box" in said[0], said
    assert said[0].endswith("python -m runner catalog --take-over")
    here, said = run("a", take_over=True)
    assert here and "in place of" in said[0] and said[-1].startswith("catalog: received 0")
    assert not run("b")[0]  # b hears it is a's now
    # export, report, feeds and view on b say where the dataset is, not "run catalog first".
    assert existing_catalog(DataLayout(tmp_path / "b"), "export") is None
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and f":{(tmp_path / 'a').resolve()}" in said, said
    assert said.startswith("export: no catalog here; the cluster's dataset is built on ")
    # Redis away: each box still knows its part from the last answer it had.
    down = "redis://127.0.0.1:1/0"
    here, said = run("a", url=down)
    assert here and "built from the segments already here" in said[0]
    here, said = run("b", url=down)
    assert not here and len(said) == 1 and "is unreachable" in said[0], said
    assert f":{(tmp_path / 'a').resolve()}" in said[0]


def add_segment(layout: Any, stamp: str) -> str:
    name = f"docs-0of1-{stamp}.jsonl"
    (layout.items_dir("docs") / name).write_text(
        "".join(json.dumps({"url": f"http://h/{stamp}/{n}"}) + "\n" for n in range(20)))
    return name


def test_what_redis_loses_before_the_dataset_box_confirms_it_is_shipped_again(
        tmp_path: Path, redis_url: str, redis_server: Any) -> None:
    client = redis_server.client()
    a, b = box(tmp_path, "a", redis_url), box(tmp_path, "b", redis_url)
    segments = write_segments(b["layout"], 2, 4)
    claim(a)
    assert b["shipper"].ship().shipped == 2
    # Redis restarted from an older snapshot (or failed over, or flushed) before the drain: the
    # queue and the dataset box's record are gone; the user runs catalog on A again.
    client.flushall()
    assert b["shipper"].ship().lost == 2  # no dataset box known now: shipped again for it
    claim(a)
    again = b["shipper"].ship()
    assert (again.lost, again.shipped) == (0, 0)  # the same dataset box: nothing more
    assert drain_into(a).received == 2
    settled = b["shipper"].ship()  # the confirmations are popped into the ledger
    assert (settled.confirmed, settled.lost, settled.shipped) == (2, 0, 0)
    assert client.llen("hubcollect:dataset:confirmed:b:docs") == 0  # consumed: bounded

    # A confirmation lost (Redis rolled back after the drain): shipped again, skipped, once.
    segments[add_segment(b["layout"], "20260120T000000Z")] = b""
    assert b["shipper"].ship().shipped == 1
    assert drain_into(a).received == 1
    client.delete("hubcollect:dataset:confirmed:b:docs")
    lost = b["shipper"].ship()
    assert (lost.lost, lost.shipped) == (1, 1)
    assert (drain_into(a).received, b["shipper"].ship().confirmed) == (0, 1)
    quiet = b["shipper"].ship()
    assert (quiet.shipped, quiet.lost, quiet.confirmed) == (0, 0, 0)
    assert sorted(received(a["layout"])) == sorted(f"b--{name}.gz" for name in segments)
    assert redis_holds(client) == (0, 0, [])
    # An entry whose segment Redis lost (the queue restored, the segment not) leaves the queue.
    client.rpush("hubcollect:dataset:queue", "docs/b--docs-0of1-20260131T000000Z.jsonl.gz")
    assert drain_into(a).received == 0 and redis_holds(client) == (0, 0, [])
    # A confirmation from a dataset box this box no longer ships to counts for nothing.
    client.rpush("hubcollect:dataset:confirmed:b:docs", "someone docs-0of1-20260130T000000Z")
    assert b["shipper"].ship().confirmed == 0

    # items_keep_days on b: old compressed segments the dataset box confirmed go, no other.
    import os

    from runner.catalog.gather import remove_confirmed_segments

    directory = b["layout"].items_dir("docs")
    for name in ("docs-0of1-20260100T000000Z.jsonl", "docs-0of1-20260101T000000Z.jsonl"):
        (directory / f"{name}.gz").write_bytes(gzip.compress((directory / name).read_bytes()))
        (directory / name).unlink()
        os.utime(directory / f"{name}.gz", (1, 1))
    unconfirmed = add_segment(b["layout"], "20260121T000000Z")
    (directory / f"{unconfirmed}.gz").write_bytes(b"")
    os.utime(directory / f"{unconfirmed}.gz", (1, 1))
    assert remove_confirmed_segments(b["layout"], 1) == 2
    assert (directory / f"{unconfirmed}.gz").exists()
    # The ledger forgets what left the disk: it grows with what the box keeps, not its history.
    b["shipper"].ship()
    ledger = b["shipper"].ledger
    assert "docs-0of1-20260100T000000Z.jsonl" not in ledger.names() | ledger.confirmed()
    assert "docs-0of1-20260120T000000Z.jsonl" in ledger.confirmed()


def test_a_box_id_is_drawn_once_kept_and_a_copied_one_is_refused_in_one_line(
        tmp_path: Path, redis_url: str, redis_server: Any) -> None:
    import shutil

    from runner.catalog.gather import gather
    from scraper.cluster.boxid import Box, BoxIdClash, legacy_id
    from scraper.cluster.shipping import ENTRY_RE, Shipper, entry_name
    from scraper.config.collector import CollectorConfig
    from scraper.redis.connection import RedisLink
    from scraper.redis.keys import Keys
    from scraper.utils.layout import DataLayout

    first = DataLayout(tmp_path / "a")
    mine = Box.here(first)
    assert Box.here(first) == mine  # kept: a restart is the same box
    assert ENTRY_RE.fullmatch(entry_name("docs", mine.id, "docs-0of1-20260101T000000Z.jsonl"))
    # Same host, same path (a cloned image started fresh): its own id, drawn at random.
    shutil.rmtree(first.state_dir)
    assert Box.here(first).id != mine.id
    # A box that shipped before ids were drawn keeps its old one (its role, its ledgers).
    legacy = DataLayout(tmp_path / "legacy")
    legacy.shipped_dir.mkdir(parents=True)
    assert Box.here(legacy).id == legacy_id(mine.name.split(":")[0], legacy.root)

    # state/ copied to another data dir: the id is the same, Redis knows it is another box's.
    keys = Keys()
    original = Box.here(first)
    original.register(redis_server.client(), keys.dataset_ids)
    copy = DataLayout(tmp_path / "copy")
    shutil.copytree(first.state_dir, copy.state_dir)
    twin = Box.here(copy)
    assert twin.id == original.id
    renamed = Box(original.id, "renamed-host:" + original.name.partition(":")[2])
    renamed.register(redis_server.client(), keys.dataset_ids)  # a renamed host: the same box
    with pytest.raises(BoxIdClash) as clash:
        twin.register(redis_server.client(), keys.dataset_ids)
    said = str(clash.value)
    assert "state/box-id" in said and str(first.root.resolve()) in said and "\n" not in said
    write_segments(copy, 1, 5)
    with pytest.raises(BoxIdClash):
        Shipper(RedisLink(redis_url), keys, copy, "docs", max_bytes=1 << 30).ship()
    assert redis_holds(redis_server.client())[1] == 0  # the twin shipped nothing
    out: list[str] = []
    config = CollectorConfig(data_dir=copy.root, redis_url=redis_url)
    assert not gather(config, copy, take_over=True, scheduled=False, say=out.append,
                      warn=out.append)
    assert len(out) == 1 and "state/box-id" in out[0], out
    assert redis_server.client().get(keys.dataset_box) is None  # no take-over by a twin
    (copy.box_id_file).unlink()  # what the line says to do: the copy draws its own id
    assert gather(config, copy, take_over=True, scheduled=False, say=out.append,
                  warn=out.append)


def test_what_goes_wrong_around_the_dataset_is_one_line_never_a_traceback(
        tmp_path: Path, redis_url: str, redis_server: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from runner.catalog.gather import choose, gather
    from scraper.cluster.shipping import Box, SegmentShipper
    from scraper.config.collector import CollectorConfig
    from scraper.redis.keys import Keys
    from scraper.utils.layout import DataLayout
    from tests.support.incrawler import PlainSpider, project_crawler

    client, keys = redis_server.client(), Keys()

    def catalog(name: str, url: str = redis_url, take_over: bool = False) -> list[str]:
        said: list[str] = []
        config = CollectorConfig(data_dir=tmp_path / name, redis_url=url)
        gather(config, DataLayout(config.data_dir), take_over=take_over, scheduled=False,
               say=said.append, warn=said.append)
        return said

    # An unusable state/: said before Redis is told of a take-over.
    (tmp_path / "file").mkdir()
    (tmp_path / "file" / "state").write_text("not a directory")
    said = catalog("file", take_over=True)
    assert len(said) == 1 and "state" in said[0] and "writable directory" in said[0], said
    assert client.get(keys.dataset_box) is None
    # A record someone wrote by hand: a take-over replaces it.
    client.set(keys.dataset_box, "{not json")
    assert choose(client, keys, Box("t", "t:/t"), take_over=True, scheduled=False)[1] is None
    # A wrong password says so.
    client.config_set("requirepass", "right")
    try:
        said = catalog("pw", url=redis_url.replace("redis://", "redis://:wrong@"))
    finally:
        import redis

        redis.Redis.from_url(redis_url.replace("redis://", "redis://:right@")).config_set(
            "requirepass", "")
    assert len(said) == 1 and "refused the password" in said[0] and "wrong" not in \
        said[0].split("redis://")[1].split(" ")[0], said

    # The worker's shipper: a state dir it cannot write, Redis answering an error.
    crawler = project_crawler(PlainSpider, REDIS_URL=redis_url, ITEMSTORE_ENABLED=True,
                              COLLECTOR_DATA_DIR=str(tmp_path / "w"))
    shipper = SegmentShipper.from_crawler(crawler)
    layout = DataLayout(tmp_path / "w")
    layout.state_dir.mkdir(parents=True)
    layout.shipped_dir.write_text("a file")
    with caplog.at_level(logging.INFO, logger="scraper.cluster"):
        shipper.spider_closed()
        layout.shipped_dir.unlink()
        client.set(keys.dataset_ids, "not a hash")
        shipper.spider_closed()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 2 and not any(r.exc_info for r in caplog.records), caplog.text
    assert "state dir must be writable" in errors[0].getMessage()
    assert "Redis answered ResponseError" in errors[1].getMessage()
    # A file no entry can name is said once, not at every round's end.
    client.delete(keys.dataset_ids)
    layout.items_dir("t").mkdir(parents=True)
    (layout.items_dir("t") / "a copy.jsonl").write_text("{}\n")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="scraper.cluster"):
        for _ in range(2):
            SegmentShipper.from_crawler(crawler).spider_closed()  # a worker process per round
    assert caplog.text.count("their names are not segment names") == 1, caplog.text


def test_an_upload_reserves_its_room_so_boxes_uploading_together_stay_under_the_cap(
        tmp_path: Path, redis_url: str, redis_server: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import scraper.cluster.shipping as shipping

    client = redis_server.client()
    size = len(write_segments(box(tmp_path, "probe", redis_url)["layout"], 1, 6)[
        "docs-0of1-20260100T000000Z.jsonl"])
    cap = int(size * 1.5)  # one segment, not two
    b, c = box(tmp_path, "b", redis_url, cap), box(tmp_path, "c", redis_url, cap)
    write_segments(b["layout"], 1, 7)
    write_segments(c["layout"], 1, 8)
    real_chunks = shipping.compressed_chunks
    during: list[Any] = []

    def c_ships_meanwhile(path: Path) -> Any:
        if not during:  # b's upload has begun, not committed: c's must wait for room
            during.append(c["shipper"].ship())
        yield from real_chunks(path)

    monkeypatch.setattr(shipping, "compressed_chunks", c_ships_meanwhile)
    assert b["shipper"].ship().shipped == 1
    assert (during[0].shipped, during[0].refused) == (0, 1)
    held = redis_holds(client)[0]
    assert 0 < held <= cap

    # An upload killed mid-way holds its room until it lapses, then gives it back.
    claim(box(tmp_path, "a", redis_url))
    drain_into(box(tmp_path, "a", redis_url))
    assert redis_holds(client)[0] == 0

    def killed(path: Path) -> Any:
        raise Killed
        yield b""

    monkeypatch.setattr(shipping, "compressed_chunks", killed)
    with pytest.raises(Killed):
        c["shipper"].ship()
    assert redis_holds(client)[0] > 0  # reserved
    monkeypatch.setattr(shipping, "compressed_chunks", real_chunks)
    assert c["shipper"].ship().shipped == 1  # its own restart takes its reservation back first
    drain_into(box(tmp_path, "a", redis_url))
    assert redis_holds(client)[0] == 0 and not client.hlen("hubcollect:dataset:reserved")
    write_segments(b["layout"], 2, 9)
    monkeypatch.setattr(shipping, "compressed_chunks", killed)
    with pytest.raises(Killed):
        b["shipper"].ship()
    monkeypatch.setattr(shipping, "compressed_chunks", real_chunks)
    (field, value), = client.hgetall("hubcollect:dataset:reserved").items()
    client.hset("hubcollect:dataset:reserved", field, value.split()[0] + b" 1")  # an hour on
    add_segment(c["layout"], "20260120T000000Z")  # would not fit beside b's reservation
    assert c["shipper"].ship().shipped == 1  # it lapsed: its room is back
    assert redis_holds(client)[0] == len(gzip.compress(
        (c["layout"].items_dir("docs") / "docs-0of1-20260120T000000Z.jsonl").read_bytes(), 6))
