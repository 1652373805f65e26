"""The runner end to end: real forks of real `scrapy crawl` workers against the fake servers."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from runner.supervision.plan import allocate
from tests.support.collector import Collector, wait_for
from tests.support.incrawler import crawl_round
from tests.support.paths import REPO_ROOT

SEARCH_QUERIES = ["few", "alpha stars:>10", "beta"]
TRENDING = {"languages": ["", "python"], "periods": ["daily", "weekly"]}
# Limits that never make the shared budget pace a search page: what is compared here is the
# data, and the pacing has its own tests (tests/e2e/test_budget.py).
GENEROUS_FAKE = {"search_limit": 100000, "core_limit": 100000}
GENEROUS = {"search": {"limit": 100000, "window": 60}, "core": {"limit": 100000, "window": 3600}}


def configure_all(collector: Collector, github: Any, docs: Any, **top: Any) -> None:
    sites = [f"{docs.url()}/site{k}/" for k in range(3)]
    collector.configure(github=github, docs_urls=sites, spiders={
        "trending": dict(TRENDING),
        "search": {"queries": SEARCH_QUERIES, "per_page": 50},
        "docs": {"max_pages_per_site": 200},
    }, **top)
    collector.update_config({"github": {"limits": GENEROUS}})


def hashes(collector: Collector, spider: str) -> set[str]:
    return {item["content_hash"] for item in collector.items(spider)}



def round_lines(collector: Collector, spider: str) -> str:
    """Each shard's round summary lines and item files, for a failure's message."""
    lines = [line for log in sorted((collector.data_dir / "logs").glob(f"{spider}-*.log"))
             for line in log.read_text(encoding="utf-8").splitlines()
             if line.startswith(f"{spider} ") or " ERROR: " in line or " WARNING: " in line]
    files = [f"{path.name}: {len(path.read_bytes().splitlines())} lines"
             for path in collector.item_files(spider)]
    return "\n".join(lines + files)


def status_json(collector: Collector) -> dict[str, Any]:
    result = collector.runner("status", "--json")
    status = json.loads(result.stdout)
    # 0 while a runner runs, 3 when none does (a finished --once run included)
    assert result.returncode == (0 if status["runner"]["alive"] else 3), result.stderr
    return status


def running_worker_pids(collector: Collector) -> list[int]:
    status = collector.data_dir / "state" / "status.json"
    try:
        workers = json.loads(status.read_text())["workers"]
    except (OSError, ValueError):
        return []
    return [w["pid"] for w in workers if w["state"] == "running" and w["pid"]]


def test_allocate_largest_remainder_with_caps() -> None:
    assert allocate(20, {"docs": 2, "trending": 1, "search": 1},
                    {"docs": 50, "trending": 50, "search": 50}) == {
        "docs": 10, "trending": 5, "search": 5}
    # search has only 4 queries: its surplus goes to the others
    assert allocate(20, {"docs": 2, "trending": 1, "search": 1},
                    {"docs": 50, "trending": 50, "search": 4}) == {
        "docs": 11, "trending": 5, "search": 4}
    # nobody can use more than their entries: the rest is not started
    assert allocate(20, {"docs": 2, "trending": 1, "search": 1},
                    {"docs": 2, "trending": 3, "search": 1}) == {
        "docs": 2, "trending": 3, "search": 1}
    assert allocate(5, {"docs": 0, "trending": 1, "search": 1},
                    {"docs": 9, "trending": 9, "search": 9})["docs"] == 0


@pytest.mark.timeout(240)
@pytest.mark.parametrize("fake_github", [GENEROUS_FAKE], indirect=True)
def test_once_with_six_workers_equals_unsharded_crawls(
        tmp_path: Path, fake_github: Any, fake_docs: Any) -> None:
    sharded = Collector(tmp_path / "sharded")
    # All six crawl at once: the pool's own rule (a busy machine holds rounds back) is
    # tests/e2e/test_autoscale.py's.
    configure_all(sharded, fake_github, fake_docs, autoscale={"min_concurrency": 6})
    result = sharded.runner("--workers", "6", "--once")
    assert result.returncode == 0, result.stderr
    assert "plan: docs 3 (0/3..2/3), trending 2, search 1 — 6 workers" in result.stdout

    plain = Collector(tmp_path / "plain")
    configure_all(plain, fake_github, fake_docs)
    # Each spider's unsharded round, in this process: the same spider and components.
    for spider in ("trending", "search", "docs"):
        crawl_round(spider, plain.config_path)
        expected = hashes(plain, spider)
        assert expected, f"the unsharded {spider} crawl collected nothing"
        got = hashes(sharded, spider)
        assert got == expected, (
            f"{spider}: {len(got)} items sharded, {len(expected)} unsharded, "
            f"{len(expected - got)} only unsharded, {len(got - expected)} only sharded\n"
            f"{result.stdout}{round_lines(sharded, spider)}")
        # each shard wrote its own files, and no item is in two shards
        shards = {item["shard"] for item in sharded.items(spider)}
        assert len(shards) == {"docs": 3, "trending": 2, "search": 1}[spider]
        assert len(sharded.items(spider)) == len(expected)

    # A round's log is its summary line, warnings and errors: the stats are in the worker's
    # state file, and Scrapy's dump of them (two thirds of the log) is at DEBUG.
    logs = [path.read_text() for path in (sharded.data_dir / "logs").glob("*-*of*.log")]
    assert len(logs) == 6 and not [log for log in logs if "Dumping Scrapy stats" in log]
    assert sum(map(len, logs)) / len(logs) <= 1500, [len(log) for log in logs]

    status = status_json(sharded)
    assert [w["state"] for w in status["workers"]] == ["done"] * 6
    assert status["totals"]["items"] == sum(len(hashes(plain, s)) for s in
                                            ("trending", "search", "docs"))


@pytest.mark.timeout(240)
def test_killed_worker_is_restarted_and_its_shard_completes(
        tmp_path: Path, fake_docs_factory: Any) -> None:
    docs = fake_docs_factory(sites=2, pages=40, latency_ms=60)
    collector = Collector(tmp_path / "c")
    collector.configure(docs_urls=[f"{docs.url()}/site{k}/" for k in range(2)],
                        spiders={"docs": {"settings": {"CONCURRENT_REQUESTS": 2}}},
                        autoscale={"min_concurrency": 2})
    runner = collector.start_runner("--workers", "2", "--once", "--spiders", "docs")
    try:
        pids = wait_for(lambda: len(running_worker_pids(collector)) == 2
                        and running_worker_pids(collector), 30, "two running workers")
        victim = pids[0]
        wait_for(lambda: collector.item_files("docs") or list(
            (collector.data_dir / "items" / "docs").glob("*.part")), 30, "a first item")
        os.kill(victim, signal.SIGKILL)
        _out, err = runner.communicate(timeout=180)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 0, err
    status = status_json(collector)
    assert sum(w["restarts"] for w in status["workers"]) >= 1
    assert all(w["state"] == "done" for w in status["workers"])
    assert "killed by SIGKILL" in (collector.data_dir / "logs" / "runner.log").read_text()

    plain = Collector(tmp_path / "plain")
    plain.configure(docs_urls=[f"{docs.url()}/site{k}/" for k in range(2)])
    crawl_round("docs", plain.config_path)
    assert hashes(collector, "docs") == hashes(plain, "docs")


def integrity_ok(path: Path) -> bool:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


@pytest.mark.timeout(180)
def test_sigterm_mid_round_stops_everything_and_stores_open(
        tmp_path: Path, fake_docs_factory: Any) -> None:
    docs = fake_docs_factory(sites=4, pages=60, latency_ms=150)
    collector = Collector(tmp_path / "c")
    # Every worker crawling when the SIGTERM comes, whatever the machine's cores.
    collector.configure(docs_urls=[f"{docs.url()}/site{k}/" for k in range(4)], stop_timeout=8,
                        autoscale={"min_concurrency": 4})
    runner = collector.start_runner("--workers", "4", "--spiders", "docs")
    try:
        pids = wait_for(lambda: len(running_worker_pids(collector)) == 4
                        and running_worker_pids(collector), 30, "four running workers")
        wait_for(lambda: list((collector.data_dir / "items" / "docs").glob("*.part")), 30,
                 "items being written")
        started = time.time()
        runner.send_signal(signal.SIGTERM)
        runner.wait(timeout=8 + 10)
        took = time.time() - started
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 0
    assert took < 8 + 5
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
    stores = list((collector.data_dir / "state").rglob("*.sqlite"))
    assert len(stores) >= 2  # the spider's deltafetch and content-hash stores, all shards
    assert all(integrity_ok(store) for store in stores)
    for path in collector.item_files("docs"):
        for line in path.read_text(encoding="utf-8").splitlines():
            json.loads(line)
    # every round that was stopped closed its file: no .part left behind
    assert not list((collector.data_dir / "items" / "docs").glob("*.part"))


@pytest.mark.timeout(120)
def test_sigkilled_runner_takes_its_workers_along(tmp_path: Path, fake_docs_factory: Any) -> None:
    docs = fake_docs_factory(sites=2, pages=60, latency_ms=200)
    collector = Collector(tmp_path / "c")
    collector.configure(docs_urls=[f"{docs.url()}/site{k}/" for k in range(2)],
                        autoscale={"min_concurrency": 2})
    runner = collector.start_runner("--workers", "2", "--spiders", "docs")
    try:
        pids = wait_for(lambda: len(running_worker_pids(collector)) == 2
                        and running_worker_pids(collector), 30, "two running workers")
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)
        wait_for(lambda: not any(psutil.pid_exists(p) for p in pids), 5,
                 "the orphaned workers to end")
    finally:
        if runner.poll() is None:
            runner.kill()


def test_memory_guard_refuses_an_oversized_plan(collector: Collector) -> None:
    collector.configure(docs_urls=[f"http://127.0.0.2:9/site{k}/" for k in range(120)])
    result = collector.runner("--workers", "100", "--memory-budget", "2G", "--spiders", "docs")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "refusing 100 workers" in lines[0]
    assert "2.0 GB" in lines[0]
    assert "largest safe --workers is" in lines[0]
    assert "Traceback" not in result.stderr
    assert not (collector.data_dir / "state" / "runner.pid").exists()


@pytest.mark.timeout(120)
def test_second_runner_is_refused_and_status_shows_workers(
        tmp_path: Path, fake_docs_factory: Any) -> None:
    docs = fake_docs_factory(sites=2, pages=30, latency_ms=100)
    collector = Collector(tmp_path / "c")
    collector.configure(docs_urls=[f"{docs.url()}/site{k}/" for k in range(2)],
                        round_interval=300, autoscale={"min_concurrency": 2})
    first = collector.start_runner("--workers", "2", "--spiders", "docs")
    try:
        wait_for(lambda: len(running_worker_pids(collector)) == 2, 30, "two running workers")
        second = collector.runner("--workers", "2", "--spiders", "docs")
        assert second.returncode == 2
        assert f"pid {first.pid}" in second.stderr
        assert len(second.stderr.strip().splitlines()) == 1

        status = status_json(collector)
        assert status["runner"]["alive"] is True
        assert status["runner"]["pid"] == first.pid
        assert [w["slug"] for w in status["workers"]] == ["docs-0of2", "docs-1of2"]
        assert {w["state"] for w in status["workers"]} <= {"running", "sleeping"}
        assert status["totals"]["workers_planned"] == 2
        text = collector.runner("status", "--config", str(collector.config_path))
        assert text.returncode == 0
        assert "\ndocs 0/2 " in text.stdout and "\ndocs 1/2 " in text.stdout
        assert "workers up" in text.stdout
        # The same counters for node_exporter, rewritten at every status write.
        prom = collector.data_dir / "state" / "metrics" / "hubcollect.prom"
        metrics = wait_for(lambda: prom.exists() and prom.read_text(), 10, "the metrics file")
        assert "hubcollect_runner_up 1\n" in metrics and metrics.endswith("# EOF\n")
        assert 'hubcollect_shard_rounds{spider="docs",shard="1/2"} ' in metrics

        # `stop` ends the runner through its pidfile
        stopped = collector.runner("stop")
        assert stopped.returncode == 0, stopped.stderr
        assert first.wait(timeout=5) == 0
    finally:
        if first.poll() is None:
            first.kill()
    assert status_json(collector)["runner"]["alive"] is False


@pytest.mark.parametrize("args, needle", [
    (["--workers", "0"], "--workers"),
    (["--workers", "x"], "'x' is not a whole number"),
    (["--workers", "2", "--spiders", "docs,nope"], "'nope' is not a spider"),
    (["--workers", "2", "--memory-budget", "2X"], "'2X' is not a size"),
    (["--workers", "2", "--bogus"], "--bogus"),
    (["status", "--nope"], "--nope"),
    ([], "--workers"),
])
def test_bad_arguments_are_one_line_and_exit_2(collector: Collector, args: list[str],
                                               needle: str) -> None:
    collector.configure()
    result = collector.runner(*args)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert needle in result.stderr
    assert "Traceback" not in result.stderr


def test_config_errors_are_one_line_and_exit_2(collector: Collector) -> None:
    collector.config_path.write_text("round_interval: soon\n")
    for args in (["--workers", "2"], ["status"], ["stop"]):
        result = collector.runner(*args)
        assert result.returncode == 2
        assert result.stderr.strip().endswith(
            "round_interval: 'soon' is not a duration such as 90, 45s, 30m, 12h or 7d")
        assert len(result.stderr.strip().splitlines()) == 1


PRELOAD_CHECK = """
import sys
import runner.supervision.supervisor
runner.supervision.supervisor.preload()
from scrapy.cmdline import _get_commands_dict
from scrapy.utils.project import get_project_settings
before = set(sys.modules)
_get_commands_dict(get_project_settings(), inproject=True)
print(sorted(set(sys.modules) - before))
"""


def test_preload_leaves_a_worker_nothing_to_import_to_find_its_command() -> None:
    # scrapy.cmdline imports every command module to find `crawl`; each module a worker
    # imports after the fork is private memory in every worker, every round.
    root = REPO_ROOT
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "scraper.settings"}
    out = subprocess.run([sys.executable, "-c", PRELOAD_CHECK], cwd=root, env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout


ABC_CHECK = """
import abc
import collections.abc
import runner.supervision.supervisor
runner.supervision.supervisor.preload()
asked = []
check = abc.ABCMeta.__subclasscheck__
def counting(cls, sub):
    asked.append(cls)
    return check(cls, sub)
abc.ABCMeta.__subclasscheck__ = counting
isinstance(iter({}.items()), collections.abc.Mapping)
isinstance((x for x in ()), collections.abc.MutableMapping)
print(len(asked))
"""


def test_preload_answers_the_isinstance_checks_that_walk_every_mapping_class() -> None:
    # Unanswered, isinstance(<dict iterator>, Mapping) walks every Mapping subclass loaded
    # (over a hundred) and writes its answer into each: pages every worker would copy.
    root = REPO_ROOT
    out = subprocess.run([sys.executable, "-c", ABC_CHECK], cwd=root, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.strip() == "0", out.stdout


INTERN_CHECK = """
import sys
from pathlib import Path
from benchmarks.parentprobe import _malloc
import runner.supervision.preload
if sys.argv[1] == "unsettled":
    runner.supervision.preload.settle_interned_strings = lambda: None
import runner.supervision.supervisor
runner.supervision.supervisor.preload()
before = _malloc()["mmapped_bytes"]  # the table is large enough to be mmap-ed alone
for number in range(60_000):
    Path("state") / f"fresh-{number}.json"  # interned by pathlib, freed at once
print(_malloc()["mmapped_bytes"] - before)
"""


@pytest.mark.parametrize("mode", ["settled", "unsettled"])
def test_preload_sizes_the_interned_string_table_for_the_parents_later_paths(mode: str) -> None:
    # pathlib interns every path component; unsettled, the parent's later paths
    # rebuild CPython's interned-string table at twice its size: a step of about 1 MB hundreds
    # of rounds in. The unsettled run shows the check sees that step.
    root = REPO_ROOT
    out = subprocess.run([sys.executable, "-c", INTERN_CHECK, mode], cwd=root,
                         capture_output=True, text=True, timeout=120, check=True)
    grown = int(out.stdout.strip())
    assert (grown <= 0) if mode == "settled" else (grown > 500_000), grown


@pytest.mark.timeout(120)
def test_a_crawl_by_hand_keeps_scrapys_stats_dump(collector: Collector, fake_docs: Any) -> None:
    """A runner's round logs its stats at DEBUG (they are in its state file); a Scrapy user who
    runs ``scrapy crawl`` by hand sees the dump Scrapy always prints."""
    collector.configure(docs_urls=[f"{fake_docs.url()}/site0/"])
    result = collector.crawl("docs", "0/1")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Dumping Scrapy stats" in collector.log("docs") + result.stderr
