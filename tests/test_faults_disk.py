"""A really full filesystem as data_dir: a tmpfs the test mounts (root only)."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import Collector

DISK_MB = 24


def _can_mount() -> str | None:
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    return None


@contextlib.contextmanager
def tmpfs(mount: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at ``mount`` (made if missing) for the block; skips the test without
    root or mount support."""
    reason = _can_mount()
    if reason:
        pytest.skip(reason)
    mount.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


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
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.timeout(240)
def test_full_disk_stops_cleanly_and_resumes_when_space_is_freed(
        tmp_path: Path, small_disk: Path, fake_docs_factory: Any) -> None:
    docs = fake_docs_factory(sites=2, pages=150, page_kb=16)
    sites = [f"{docs.url()}/site{k}/" for k in range(2)]
    collector = Collector(tmp_path / "c")
    collector.data_dir = small_disk / "data"
    collector.configure(docs_urls=sites)
    # Stores, logs and a few items fit; the whole crawl (~4.8 MB of items) does not.
    assert collector.crawl("docs", "0/2", "-s", "CLOSESPIDER_ITEMCOUNT=3").returncode == 0
    ballast = fill(small_disk, leave=2560 * 1024)

    runner = collector.start_runner("--workers", "2", "--spiders", "docs", "--once")
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
        _out, err = runner.communicate(timeout=150)
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
    assert plain.crawl("docs").returncode == 0
    assert {i["content_hash"] for i in after} == {i["content_hash"] for i in plain.items("docs")}
    runner_log = (collector.data_dir / "logs" / "runner.log").read_text()
    assert "disk full:" in runner_log and "resuming workers" in runner_log


@pytest.mark.timeout(60)
@pytest.mark.parametrize("read_only", ["data", "data/state"])
def test_read_only_data_dir_is_one_line_and_exit_2(tmp_path: Path, read_only: str) -> None:
    collector = Collector(tmp_path / "c")
    collector.configure(docs_urls=["http://127.0.0.1:9/site/"])
    with tmpfs(collector.home / read_only, "size=1m") as mount:
        earlier_run = {"data": ["logs", "state/locks"], "data/state": ["locks"]}[read_only]
        for sub in earlier_run:
            (mount / sub).mkdir(parents=True)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        crawl = collector.crawl("docs", "0/1", timeout=60)
        runner = collector.runner("--workers", "1", "--spiders", "docs", "--once", timeout=60)
    for done in (crawl, runner):
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert "Read-only file system" in done.stderr
    assert crawl.stderr.startswith("scrapy crawl: ")
    assert runner.stderr.startswith("python -m runner: ")
