"""The shipping box's side of an unreadable segment: the dataset box's word that it set one
aside stops it being shipped again and keeps the box's own copy; the script that forgets a
drained entry holds whatever a hand wrote in its key. A real Redis."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from scraper.cluster.shipping import DONE, QUARANTINED
from scraper.redis.keys import Keys
from tests.support.cluster import shipping_box
from tests.support.damaged import search_lines


def test_a_segment_set_aside_is_shipped_no_more_and_kept(tmp_path: Path, redis_url: str,
                                                          redis_server: Any) -> None:
    client, keys = redis_server.client(), Keys()
    b = shipping_box(tmp_path, "b", redis_url, spider="search")
    client.set(keys.dataset_box, '{"id": "a", "name": "a"}')
    directory = b["layout"].items_dir("search")
    directory.mkdir(parents=True)
    names = [f"search-0of1-2026110{k}T000000Z.jsonl" for k in range(3)]
    for k, name in enumerate(names):
        (directory / f"{name}.gz").write_bytes(gzip.compress(search_lines(k)))
    assert b["shipper"].ship().shipped == 3
    for name in names:  # what the drain does with each: forgets it, and says so
        client.delete(keys.dataset_segment(f"search/b--{name}.gz"))
    confirmations = keys.dataset_confirmed("b", "search")
    client.rpush(confirmations, f"a {names[0]}", f"a {names[1]} {QUARANTINED}",
                 f"c {names[2]} {QUARANTINED}")  # c: not the dataset box, void

    result = b["shipper"].ship()
    assert result.set_aside == [names[1]]
    assert (result.confirmed, result.lost, result.shipped) == (2, 1, 1)  # names[2] again
    ledger = b["shipper"].ledger
    assert ledger.quarantined() == {names[1]}
    assert ledger.confirmed() == {names[0], names[1]}
    assert client.llen(confirmations) == 0
    assert b["shipper"].ship().shipped == 0  # names[2] is in Redis again, names[1] stays here


@pytest.mark.parametrize("fields", [
    {"size": "1e999"}, {"size": "inf"}, {"size": "9" * 40}, {"size": "abc"}, {"size": ""},
    {"chunks": "1"}, None])
def test_forgetting_an_entry_holds_whatever_its_key_holds(
        redis_url: str, redis_server: Any, fields: dict[str, str] | None) -> None:
    client, keys = redis_server.client(), Keys()
    seg, entry = keys.dataset_segment("search/b--x.jsonl.gz"), b"search/b--x.jsonl.gz"
    if fields is None:
        client.set(seg, "not a hash")
    else:
        client.hset(seg, mapping=fields)
    client.set(keys.dataset_bytes, 100)
    client.rpush(keys.dataset_queue, entry)
    done = client.register_script(DONE)
    assert done(keys=[keys.dataset_bytes, seg, keys.dataset_queue], args=[entry]) == 1
    assert not client.exists(seg) and client.llen(keys.dataset_queue) == 0
    assert int(client.get(keys.dataset_bytes)) == 100  # no size it could count
