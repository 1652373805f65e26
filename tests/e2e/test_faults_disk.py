"""A really full filesystem as data_dir: a tmpfs the test mounts (root only)."""

from __future__ import annotations

import collections
import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scraper.utils.diskspace import DISK_FULL_EXIT
from tests.support.collector import Collector, generous_budget
from tests.support.disk import tmpfs
from tests.support.incrawler import crawl, crawl_round

DISK_MB = 24


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", f"size={DISK_MB}m") as mount:
        yield mount


def fill(disk: Path, leave: int) -> Path:
    """A ballast file that leaves ``leave`` bytes free."""
    ballast = disk / "ballast"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(ballast, "wb") as handle:
        handle.write(b"\1" * max(0, free - leave))
    return ballast


def status(collector: Collector) -> dict[str, Any]:
    done = collector.runner("status", "--json")
    assert done.returncode in (0, 3), done.stderr  # 3: not running (yet, or any more)
    return json.loads(done.stdout)


@pytest.mark.timeout(240)
def test_full_disk_stops_cleanly_and_resumes_when_space_is_freed(
        tmp_path: Path, small_disk: Path, fake_docs_factory: Any) -> None:
    """A runner without --once waits for space, and resumes by itself once it is back."""
    docs = fake_docs_factory(sites=2, pages=150, page_kb=16)
    sites = [f"{docs.url()}/site{k}/" for k in range(2)]
    collector = Collector(tmp_path / "c")
    collector.data_dir = small_disk / "data"
    collector.configure(docs_urls=sites, round_interval=3600)
    # Stores, logs and a few items fit; the whole crawl (~4.8 MB of items) does not.
    crawl("docs", collector.config_path, settings={"CLOSESPIDER_ITEMCOUNT": 3}, shard="0/2")
    ballast = fill(small_disk, leave=2560 * 1024)

    runner = collector.start_runner("--workers", "2", "--spiders", "docs")
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            runner_state = status(collector)["runner"]
            if runner_state.get("disk_full_since"):
                break
            time.sleep(0.5)
        else:
            pytest.fail("the runner never reported the full disk")
        text = collector.runner("status").stdout
        assert "DISK FULL" in text
        assert runner.poll() is None, "the runner must wait for space, not exit"
        full_errors = [line for path in (collector.data_dir / "logs").glob("docs-*.log")
                       for line in path.read_text().splitlines() if "disk full:" in line]
        logs = collector.data_dir / "logs"
        assert full_errors, [(p.name, p.read_text()[-1500:]) for p in logs.glob("*.log")]
        assert all("Traceback" not in line for line in full_errors)
        # Nothing already written is damaged: every visible line parses.
        before = collector.items("docs")
        assert before

        ballast.unlink()
        deadline = time.time() + 150
        while time.time() < deadline:  # every shard's round after the space came back
            if all(worker["rounds"] >= 1 for worker in status(collector)["workers"]):
                break
            time.sleep(0.5)
        else:
            pytest.fail("the runner did not resume when space was freed")
        runner.send_signal(signal.SIGTERM)
        _out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 0, err
    after = collector.items("docs")
    assert {i["content_hash"] for i in before} <= {i["content_hash"] for i in after}
    for store in (collector.data_dir / "state").rglob("*.sqlite"):
        conn = sqlite3.connect(store)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok", store
        conn.close()
    assert not list((collector.data_dir / "state").rglob("*.unreadable-*"))

    plain = Collector(tmp_path / "plain")
    plain.configure(docs_urls=sites)
    crawl_round("docs", plain.config_path)  # the fault-free run, in this process
    assert {i["content_hash"] for i in after} == {i["content_hash"] for i in plain.items("docs")}
    runner_log = (collector.data_dir / "logs" / "runner.log").read_text()
    assert "disk full:" in runner_log and "resuming workers" in runner_log


@pytest.mark.timeout(240)
def test_once_on_a_full_disk_ends_at_once_and_the_next_run_writes_each_item_once(
        tmp_path: Path, fake_github: Any) -> None:
    """The data dir on a 3 MB tmpfs: --once never ended (killed at 300 s), and after space
    came back items were written twice (their lines written, their content hashes not)."""
    collector = Collector(tmp_path / "c")
    with tmpfs(collector.data_dir, "size=3m") as data:
        collector.configure(github=fake_github)
        started = time.monotonic()
        full = collector.runner("--workers", "2", "--spiders", "trending", "--once",
                                timeout=120)
        took = time.monotonic() - started
        assert full.returncode == DISK_FULL_EXIT, full.stdout + full.stderr
        (line,) = full.stderr.strip().splitlines()
        assert f"disk full: {data} has " in line and "--once ends" in line, line
        assert took < 60, f"--once took {took:.0f} s on a full disk"
        first = collector.items("trending")  # every visible line parses

        subprocess.run(["mount", "-o", "remount,size=64m", str(data)], check=True)
        again = collector.runner("--workers", "2", "--spiders", "trending", "--once")
        assert again.returncode == 0, again.stdout + again.stderr
        items = [item for item in collector.items("trending") if "rows" not in item]
    assert first
    hashes = collections.Counter(item["content_hash"] for item in items)
    assert [h for h, n in hashes.items() if n > 1] == []  # each item once
    plain = Collector(tmp_path / "plain")
    plain.configure(github=fake_github)
    assert plain.runner("--workers", "2", "--spiders", "trending", "--once").returncode == 0
    assert set(hashes) == {item["content_hash"] for item in plain.items("trending")
                           if "rows" not in item}  # and none lost


@pytest.mark.timeout(60)
@pytest.mark.parametrize("read_only", ["data", "data/state", "data/items/docs", "data/logs"])
def test_read_only_data_dir_is_one_line_and_exit_2(tmp_path: Path, read_only: str) -> None:
    collector = Collector(tmp_path / "c")
    collector.configure(docs_urls=["http://127.0.0.1:9/site/"])
    with tmpfs(collector.home / read_only, "size=1m") as mount:
        earlier_run = {"data": ["logs", "state/locks"], "data/state": ["locks"]}.get(
            read_only, [])
        for sub in earlier_run:
            (mount / sub).mkdir(parents=True)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        crawl = collector.crawl("docs", "0/1", timeout=60)
        runner = collector.runner("--workers", "1", "--spiders", "docs", "--once", timeout=60)
    for done in (crawl, runner):
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert "Read-only file system" in done.stderr
        assert str(collector.home / read_only) in done.stderr  # names the directory
    assert crawl.stderr.startswith("scrapy crawl: ")
    assert runner.stderr.startswith("python -m runner: ")


def log_lines(collector: Collector, text: str, spider: str = "docs") -> list[str]:
    return [line for line in collector.log(spider).splitlines() if text in line]


def point_at(collector: Collector, spider: str, request: pytest.FixtureRequest) -> None:
    """docs: 150 small pages; search: 60 queries of two pages (a GitHub budget write before and
    after every request) on the hostile server's API."""
    if spider == "docs":
        docs = request.getfixturevalue("fake_docs_factory")(sites=1, pages=150, page_kb=1)
        collector.configure(docs_urls=[f"{docs.url()}/site0/"])
        return
    hostile = request.getfixturevalue("fake_hostile").url()
    collector.configure(spiders={"search": {"queries": [f"q{n}" for n in range(60)],
                                            "per_page": 3}})
    generous_budget(collector, web_url=hostile, web_min_interval=0, api_url=f"{hostile}/api")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("spider", ["docs", "search"])
def test_full_store_disk_closes_the_round_like_a_full_item_disk(
        tmp_path: Path, request: pytest.FixtureRequest, spider: str) -> None:
    """The stores' disk (state/, here its own tmpfs) fills while the items' disk has room: a
    store's -wal write fails first (deltafetch, content hash, GitHub budget), as it does when
    the WAL needs a new page and an item line still fits in the item file's last one."""
    collector = Collector(tmp_path / "c")
    point_at(collector, spider, request)
    with tmpfs(collector.data_dir / "state", "size=16m") as state:
        ballast = fill(state, leave=256 * 1024)
        full = collector.crawl(spider)
        log = collector.log(spider)
        assert full.returncode == 4, log[-3000:]
        assert "Traceback" not in log + full.stderr, log[-3000:]
        assert len(log_lines(collector, "disk full:", spider)) == 1, log[-3000:]
        errors = log_lines(collector, "] ERROR: ", spider)
        assert len(errors) == 1 and "store" in errors[0], errors
        assert "Closing spider (disk_full)" in log
        collector.items(spider)  # every visible line parses

        ballast.unlink()
        again = collector.crawl(spider)
        assert again.returncode == 0, collector.log(spider)[-3000:]
        for store in state.rglob("*.sqlite"):
            conn = sqlite3.connect(store)
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok", store
            conn.close()
        assert not list(state.rglob("*.unreadable-*"))
    plain = Collector(tmp_path / "plain")
    plain.config_path.write_text(collector.config_path.read_text().replace(
        str(collector.data_dir), str(plain.data_dir)))
    crawl_round(spider, plain.config_path)  # the fault-free run, in this process
    # nothing lost: the union equals a fault-free run's
    assert ({i["content_hash"] for i in collector.items(spider)}
            == {i["content_hash"] for i in plain.items(spider)})


@pytest.mark.timeout(60)
def test_store_that_cannot_be_opened_for_lack_of_space_is_exit_4(
        tmp_path: Path, fake_docs_factory: Any) -> None:
    docs = fake_docs_factory(sites=1, pages=5)
    collector = Collector(tmp_path / "c")
    collector.configure(docs_urls=[f"{docs.url()}/site0/"])
    with tmpfs(collector.data_dir / "state", "size=1m") as state:
        (state / "locks").mkdir()
        (state / "locks" / "docs-0of1.lock").write_text("1\n")  # an earlier round's
        fill(state, leave=0)
        done = collector.crawl("docs")
    log = collector.log("docs")
    assert done.returncode == 4, (done.stderr, log[-3000:])
    assert "Traceback" not in log + done.stderr, log[-3000:]
    assert len(log_lines(collector, "disk full:")) == 1, log[-3000:]
    assert len(log_lines(collector, "] ERROR: ")) == 1, log_lines(collector, "] ERROR: ")
