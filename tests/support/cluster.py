"""A real ``redis-server`` on loopback for the distributed mode's tests, and the helpers that run
two or more "machines" (separate data dirs and pidfiles) on it against the fake docs site.

The server runs on a random port with ``--save "" --appendonly no`` in a temporary directory;
one per test module (the fixture), flushed for each test.
"""

from __future__ import annotations

import collections
import contextlib
import json
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis

from tests.support.collector import Collector, wait_for
from tests.support.fakes.launcher import FakeServer

REDIS_SERVER = shutil.which("redis-server")
OUTAGE_LINE = "unreachable ("  # the one line a worker logs when Redis goes away
SITES, PAGES = 3, 20


# --- a real Redis ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    def __init__(self, directory: Path, *options: str) -> None:
        self.directory = directory
        self.options = options  # more redis-server options, over the defaults below
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        assert REDIS_SERVER is not None
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.directory), "--daemonize", "no",
             *self.options],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while True:
            try:
                if self.client().ping():
                    return
            except redis.exceptions.ConnectionError:
                pass
            if time.time() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def client(self) -> Any:
        return redis.Redis.from_url(self.url, socket_timeout=5)

    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def restart(self, down_for: float) -> None:
        """Killed (its data gone: no persistence here), then started again on the same port."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()
        time.sleep(down_for)
        self.start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        kill_leftover_runners()
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> Iterator[str]:
    """A clean Redis for each test, and no runner of it left running after it."""
    redis_server.client().flushall()
    yield redis_server.url
    kill_leftover_runners()


_started: list[subprocess.Popen[str]] = []
"""Every runner :func:`start_runners` started: a test that fails before it waited for them must
not leave them working on the next test's Redis (the module shares one server)."""


def kill_leftover_runners() -> None:
    import psutil

    while _started:
        proc = _started.pop()
        if proc.poll() is not None:
            continue
        with contextlib.suppress(psutil.NoSuchProcess):
            family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
            for member in family:
                with contextlib.suppress(psutil.NoSuchProcess):
                    member.kill()
        proc.communicate()


# --- helpers ------------------------------------------------------------------------------------


def configure_docs(collector: Collector, docs: FakeServer, **spiders: Any) -> None:
    collector.configure(docs_urls=[f"{docs.url()}/site{k}/" for k in range(SITES)],
                        spiders={"docs": {"max_pages_per_site": 500, **spiders}})


def page_counts(docs: FakeServer) -> collections.Counter[str]:
    return collections.Counter(r["path"] for r in docs.stats()["requests"]
                               if r["path"] != "/robots.txt")


def items_of(*collectors: Collector, spider: str = "docs") -> list[dict[str, Any]]:
    return [item for c in collectors for item in c.items(spider)]


def start_runners(collectors: list[Collector], url: str, spider: str, workers: int = 2
                  ) -> list[subprocess.Popen[str]]:
    procs = [c.start_runner("--workers", str(workers), "--spiders", spider, "--once",
                            "--redis-url", url) for c in collectors]
    _started.extend(procs)
    return procs


def finish(procs: list[subprocess.Popen[str]], timeout: float = 90) -> list[tuple[int, str]]:
    """(exit status, stderr) of each runner, a hung one killed and reported."""
    return [(done.returncode, done.stderr) for done in Collector.wait_all(procs, timeout)]



def worker_logs(collector: Collector) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8")
            for p in (collector.data_dir / "logs").glob("docs-*.log")}


def runner_in_process(collector: Collector, capsys: pytest.CaptureFixture[str], *argv: str
                      ) -> tuple[int, str]:
    """``python -m runner ARGV`` for ``collector`` through the runner's own ``main`` in this
    process (milliseconds, where a process costs seconds on a loaded machine): its exit status
    and what it printed."""
    from runner.cli.main import main

    capsys.readouterr()
    code = main([*argv[:1], "--config", str(collector.config_path), *argv[1:]])
    return code, capsys.readouterr().out


def runner_workers(client: Any, runner_pid: int) -> set[str]:
    """The cluster ids of the runner's worker processes."""
    return {key.decode().rsplit(":", 1)[1] for key in client.scan_iter("hubcollect:proc:*")
            if json.loads(client.get(key) or "{}").get("runner_pid") == runner_pid}


def hold_site_until_all_joined(site: FakeServer, client: Any, procs: list[subprocess.Popen[str]],
                               workers: int, timeout: float = 120) -> None:
    """Keep the site stopped (SIGSTOP: its requests wait in its socket) until every runner has
    all its workers in the cluster: however far apart a loaded machine starts the runners, the
    first cannot finish the round alone before the others join it."""
    site.process.send_signal(signal.SIGSTOP)
    try:
        def joined() -> bool:
            ended = [proc.args for proc in procs if proc.poll() is not None]
            assert not ended, f"a runner ended before the others joined: {ended}"
            return all(len(runner_workers(client, proc.pid)) >= workers for proc in procs)

        wait_for(joined, timeout, f"{workers} workers of each runner in the cluster")
    finally:
        site.process.send_signal(signal.SIGCONT)


def status_json(collector: Collector) -> dict[str, Any]:
    result = collector.runner("status", "--json", timeout=30)
    status = json.loads(result.stdout)
    assert result.returncode == (0 if status["runner"]["alive"] else 3), result.stderr
    return status


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One unsharded one-machine ``scrapy crawl docs`` of the fake site: what every
    distributed crawl must add up to (content hashes do not depend on the host or port)."""
    from tests.support.fakes.launcher import start_fake_docs

    home = tmp_path_factory.mktemp("baseline")
    docs = start_fake_docs(home / "fake", sites=SITES, pages=PAGES)
    try:
        collector = Collector(home / "collector")
        configure_docs(collector, docs)
        result = collector.crawl("docs", None, timeout=90)
        assert result.returncode == 0, result.stderr[-2000:]
        hashes = [item["content_hash"] for item in collector.items("docs")]
        return {"hashes": set(hashes), "items": len(hashes), "counts": page_counts(docs)}
    finally:
        docs.stop()


def machines(tmp_path: Path, n: int) -> list[Collector]:
    return [Collector(tmp_path / f"box-{k}") for k in range(n)]


def tree(proc: subprocess.Popen[str]) -> list[psutil.Process]:
    parent = psutil.Process(proc.pid)
    return [parent, *parent.children(recursive=True)]


def send_all(processes: list[psutil.Process], sig: int) -> None:
    """``sig`` to each; one that ended since it was listed is skipped: a worker whose round
    ended is a zombie while its runner is stopped, and is reaped once the runner continues."""
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.send_signal(sig)


def crawler_for(url: str, **settings: Any) -> Any:
    """The parts of a crawler our components read — distributed settings, the project's
    fingerprinter, a spider named "t" — without a reactor (nothing here crawls)."""
    from types import SimpleNamespace

    from scrapy import Spider
    from scrapy.settings import Settings
    from scrapy.utils.misc import build_from_crawler, load_object

    from scraper.cluster import wiring

    values = Settings()
    values.setmodule("scraper.settings")
    wiring.configure(values, url)
    values.setdict(settings, priority="cmdline")
    crawler = SimpleNamespace(settings=values, stats=None, spider=None, engine=None)
    crawler.request_fingerprinter = build_from_crawler(
        load_object(values["REQUEST_FINGERPRINTER_CLASS"]), crawler)
    spider = Spider(name="t")
    spider.crawler, spider.settings = crawler, values
    crawler.spider = spider
    return crawler


def shipping_box(tmp_path: Path, name: str, url: str, spider: str = "docs",
                 cap: int = 1 << 30) -> dict[str, Any]:
    """One box's data dir, its id (``name``), a Redis link and the project's shipper of
    ``spider``'s segments, in this process."""
    from scraper.cluster.shipping import Box, Shipper
    from scraper.redis.connection import RedisLink
    from scraper.redis.keys import Keys
    from scraper.utils.layout import DataLayout

    layout = DataLayout(tmp_path / name)
    identity = Box(name, f"host:{layout.root}")
    link = RedisLink(url)
    return {"layout": layout, "box": identity, "link": link,
            "shipper": Shipper(link, Keys(), layout, spider, max_bytes=cap, box=identity)}
