"""The runner's state under ``data/state/``: secrets at rest, file modes, and a stepped clock.

Real runners against the fake docs server (and a real ``redis-server`` with a password).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.core.runnerstate import StatusFile, read_status
from scraper.utils.statefile import WorkerRecord, read_worker
from tests.support.collector import Collector, wait_for
from tests.support.paths import REPO_ROOT

REDIS_SERVER = shutil.which("redis-server")
PASSWORD = "s3cret-pw-4217"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def docs_collector(tmp_path: Path, fake_docs_factory: Any, **top: Any) -> Collector:
    docs = fake_docs_factory(sites=2, pages=10)
    collector = Collector(tmp_path / "c")
    collector.configure(docs_urls=[f"{docs.url()}/site{k}/" for k in range(2)], **top)
    return collector


# --- the records ----------------------------------------------------------------------------------


def test_state_records_read_leniently_and_judge_the_round_by_pid(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"pid": 42, "items": "many", "started_at": 5, "stats": []}))
    record = read_worker(path)
    assert record == WorkerRecord(pid=42, started_at=5)  # wrong types take their defaults
    assert record.is_round_of(42) and not record.is_round_of(43) and not record.is_round_of(None)
    for text in ("", "[]", "{not json", "\x00\xff"):
        path.write_text(text)
        assert read_worker(path) is None and read_status(path) is None
    path.write_text(json.dumps({"runner": {"pid": 7, "planned": 2}, "workers": [{"slug": "a"}, 3]}))
    status = read_status(path)
    assert isinstance(status, StatusFile)
    assert (status.runner.pid, status.runner.planned, [w.slug for w in status.workers]) == (
        7, 2, ["a"])


# --- 19.2: the Redis password is never at rest; state is private ----------------------------------


@pytest.fixture(params=["userinfo", "query"])
def redis_with_password(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """The password in the URL's userinfo, or in the query form redis-py also reads."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server not found on PATH")
    pytest.importorskip("scrapy_redis", reason="the distributed mode needs scrapy-redis")
    port = free_port()
    process = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path), "--requirepass", PASSWORD],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: _answers(port), 10, "redis-server")
        if request.param == "userinfo":
            yield f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
        else:
            yield f"redis://127.0.0.1:{port}/0?password={PASSWORD}"
    finally:
        process.kill()
        process.wait()


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.mark.timeout(120)
def test_redis_password_is_masked_everywhere_and_state_is_private(
        tmp_path: Path, fake_docs_factory: Any, redis_with_password: str) -> None:
    collector = docs_collector(tmp_path, fake_docs_factory)
    env = collector.env()
    env.pop("COLLECTOR_REDIS_URL", None)
    local = collector.runner("--workers", "1", "--spiders", "docs", "--once", env=env)
    assert local.returncode == 0, local.stderr  # one machine: its SQLite stores, locks, memory
    run = collector.runner("--workers", "1", "--spiders", "docs", "--once",
                           "--redis-url", redis_with_password, env=env)
    assert run.returncode == 0, run.stderr
    shown = collector.runner("status", "--json", env=env)
    assert shown.returncode == 3, shown.stderr  # the --once run has finished
    masked = redis_with_password.replace(PASSWORD, "***")
    assert json.loads(shown.stdout)["runner"]["redis_url"] == masked
    status = json.loads((collector.data_dir / "state" / "status.json").read_text())
    assert status["runner"]["redis_url"] == masked
    assert masked in status["runner"]["command"]
    secret = PASSWORD.encode()
    for text in (run.stdout, run.stderr, shown.stdout, shown.stderr):
        assert PASSWORD not in text
    for path in collector.data_dir.rglob("*"):
        if path.is_file():
            assert secret not in path.read_bytes(), path
    state = collector.data_dir / "state"
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    wrong = [f"{p.relative_to(state)} {stat.S_IMODE(p.stat().st_mode):o}"
             for p in state.rglob("*")
             if stat.S_IMODE(p.stat().st_mode) != (0o700 if p.is_dir() else 0o600)]
    assert not wrong, wrong
    assert {p.name for p in state.rglob("*")} >= {
        "status.json", "runner-command.json", "runner.pid", "memory.json", "disk-reserve",
        "docs-0of1.json", "docs-0of1.lock", "docs.sqlite"}  # the dedup stores: one per spider


# --- 19.15: a clock stepped back stalls nothing ---------------------------------------------------


CLOCK_WRAPPER = """
import os, runpy, sys, time
real_time = time.time
step_file = os.environ["CLOCK_STEP_FILE"]
def stepped_time():
    # The wall clock jumps an hour back once the test creates the file (as NTP or a VM restore
    # would); time.monotonic() is untouched, as the kernel keeps it.
    return real_time() - (3600.0 if os.path.exists(step_file) else 0.0)
time.time = stepped_time
sys.argv = ["runner", *sys.argv[1:]]
runpy.run_module("runner", run_name="__main__", alter_sys=True)
"""


@pytest.mark.timeout(150)
def test_a_wall_clock_stepped_back_stalls_neither_rounds_nor_status(
        tmp_path: Path, fake_docs_factory: Any, fake_github: Any) -> None:
    """All three spiders: the GitHub ones pace on the budget, which must not wait out the hour
    the wall clock went back (it paces on time.monotonic())."""
    collector = docs_collector(tmp_path, fake_docs_factory, round_interval=1, github=fake_github,
                               spiders={"search": {"queries": ["few"]},
                                        "trending": {"languages": [""], "periods": ["daily"]}})
    wrapper = tmp_path / "clock_wrapper.py"
    wrapper.write_text(CLOCK_WRAPPER)
    step_file = tmp_path / "step-back"
    env = collector.env(CLOCK_STEP_FILE=str(step_file))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                       env.get("PYTHONPATH")]))
    status_file = collector.data_dir / "state" / "status.json"
    proc = subprocess.Popen([sys.executable, str(wrapper), "--workers", "3",
                             "--spiders", "docs,trending,search"],
                            cwd=collector.home, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        def rounds() -> dict[str, int]:
            status = read_status(status_file)
            return {w.slug.partition("-")[0]: w.rounds for w in status.workers} if status else {}

        def each_has(counts: dict[str, int]) -> bool:
            now = rounds()
            return all(now.get(spider, 0) >= n for spider, n in counts.items())

        wait_for(lambda: each_has({"docs": 1, "trending": 1, "search": 1}), 60, "a first round")
        step_file.touch()

        def written_after_the_step() -> Any:
            status = read_status(status_file)
            return status if status and status.runner.updated_at < time.time() - 3000 else None

        stepped = wait_for(written_after_the_step, 30, "a status written after the clock step")
        before = (rounds(), stepped.runner.updated_at)
        wait_for(lambda: each_has({spider: n + 2 for spider, n in before[0].items()}), 40,
                 "two more rounds of every spider after the clock step")
        after = read_status(status_file)
        assert after is not None and after.runner.updated_at > before[1]  # still written
        assert after.runner.updated_at < time.time() - 3000  # and it did see the stepped clock
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
