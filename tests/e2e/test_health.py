"""Healthy means data is flowing: real runners against closed ports and the fake servers.

Each test keeps rounds short (``round_interval: 1``, no retries) so that ``health.failed_rounds``
rounds pass in seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.core.pidfile import PidFile
from runner.core.runnerstate import (
    HealthMemory,
    SlotRecord,
    StatusFile,
    write_health_memory,
    write_status,
)
from scraper.utils.outcome import NOTHING_FETCHED_EXIT
from scraper.utils.statefile import WorkerRecord, write_worker
from tests.support.collector import RUNNER, Collector, wait_for
from tests.support.ops import Ops, Webhook

NO_RETRY = {"RETRY_TIMES": 0}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def ops(tmp_path: Path) -> Iterator[Ops]:
    ops = Ops(Collector(tmp_path / "c"))
    try:
        yield ops
    finally:
        ops.cleanup()


def worker_files(collector: Collector) -> list[dict[str, Any]]:
    files = sorted((collector.data_dir / "state" / "workers").glob("*.json"))
    return [json.loads(path.read_text()) for path in files]


def start(ops: Ops, *args: str) -> subprocess.Popen[str]:
    proc = ops.collector.start_runner(*args, env=ops.env())
    ops.started.append(proc)
    ops.pids.add(proc.pid)
    return proc


@pytest.mark.timeout(120)
def test_closed_ports_alert_once_then_recover_after_the_fix(
        ops: Ops, fake_docs_factory: Any, request: pytest.FixtureRequest) -> None:
    webhook = Webhook()
    request.addfinalizer(webhook.close)
    port = closed_port()
    ops.collector.configure(
        docs_urls=[f"http://127.0.0.1:{port}/site{k}/" for k in range(2)], stop_timeout=3,
        health={"failed_rounds": 2}, notify={"webhook_url": webhook.url},
        spiders={"docs": {"settings": NO_RETRY}})
    first = start(ops, "--workers", "2", "--spiders", "docs")
    pids = wait_for(lambda: [w["pid"] for w in ops.status()["workers"]
                             if w["state"] == "running" and w["pid"]]
                    if ops.layout.status_file.exists() else None, 30, "a running worker")
    with open(f"/proc/{pids[0]}/comm") as comm:  # named in ps and top
        assert comm.read().strip().startswith("hc docs ")

    # Within failed_rounds rounds: every shard has failed that many rounds in a row. Judged on
    # records of rounds that ended: the next round's opening record carries failed_rounds over
    # with no request sent yet (round_interval is 1 s, so one is often open).
    files = wait_for(lambda: files if len(files := worker_files(ops.collector)) == 2
                     and all(f["failed_rounds"] >= 2 and f["finished"] for f in files) else None,
                     60, "two failed rounds each")
    record = files[0]
    assert record["ok"] == 0 and record["requests"] >= 1
    assert record["responses"].get("failed", 0) >= 1
    assert f"127.0.0.1:{port}" in record["first_error"]
    assert "Connection was refused" in record["first_error"]

    alert = ops.run("watchdog")
    assert alert.returncode == 0, alert.stderr
    lines = alert.stdout.splitlines()
    assert len(lines) == 1, alert.stdout
    assert lines[0].startswith("collector unhealthy: docs 2/2 shards fetched nothing in 2 "
                               f"rounds (127.0.0.1:{port}: Connection was refused")
    assert ops.runner_pid() == first.pid  # no restart: a restart cannot open a closed port

    again = ops.run("watchdog")
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")

    shown = ops.run("status")
    assert shown.returncode == 0, shown.stderr
    assert "failing" in shown.stdout
    assert all(len(line) <= 80 for line in shown.stdout.splitlines())

    # The fix: a reachable site, and the runner started again.
    assert ops.run("stop").returncode == 0
    docs = fake_docs_factory(sites=2, pages=5)
    ops.collector.update_config({"spiders": {"docs": {
        "start_urls": [f"{docs.url()}/site{k}/" for k in range(2)]}}})
    start(ops, "--workers", "2", "--spiders", "docs")
    wait_for(lambda: all(f["ok"] and f["failed_rounds"] == 0
                         for f in worker_files(ops.collector)), 60, "rounds with data")
    recovered = ops.run("watchdog")
    assert (recovered.returncode, recovered.stdout) == (0, "collector recovered: docs\n")
    assert ops.run("watchdog").stdout == ""
    assert webhook.texts() == [lines[0], "collector recovered: docs"]


@pytest.mark.timeout(120)
def test_once_against_closed_ports_fails_and_status_says_finished(collector: Collector) -> None:
    port = closed_port()
    collector.configure(docs_urls=[f"http://127.0.0.1:{port}/site{k}/" for k in range(2)],
                        spiders={"docs": {"settings": NO_RETRY}})
    result = collector.runner("--workers", "2", "--once", "--spiders", "docs")
    assert result.returncode == 1, result.stderr
    summary = [line for line in result.stdout.splitlines() if line.startswith("docs:")]
    assert len(summary) == 1, result.stdout
    assert summary[0].startswith("docs: 0/2 shards ok, 0 pages, 0 new items; shard 0/2 "
                                 "fetched nothing in ")
    assert f"requests (127.0.0.1:{port}: Connection was refused" in summary[0]
    assert "Connection was refused" in summary[0]
    assert "Traceback" not in result.stderr

    status = collector.runner("status")
    assert status.returncode == 3  # not running: scripts test for it
    assert status.stdout.startswith("runner finished its --once run ")
    log = (collector.data_dir / "logs" / "runner.log").read_text().splitlines()
    assert log[-1].endswith("INFO: stopped (exit status 1)")


@pytest.mark.timeout(120)
def test_once_cut_short_by_stop_exits_non_zero(tmp_path: Path, fake_docs_factory: Any) -> None:
    docs = fake_docs_factory(sites=1, pages=60, latency_ms=200)
    collector = Collector(tmp_path / "c")
    collector.configure(docs_urls=[f"{docs.url()}/site0/"], stop_timeout=5,
                        spiders={"docs": {"settings": {"CONCURRENT_REQUESTS": 1}}})
    runner = collector.start_runner("--workers", "1", "--once", "--spiders", "docs")
    try:
        wait_for(lambda: list((collector.data_dir / "items" / "docs").glob("*.part")), 30,
                 "a round under way")
        assert collector.runner("stop").returncode == 0
        _, err = runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 1
    assert "stopped before every round ended" in err


@pytest.mark.timeout(120)
@pytest.mark.parametrize("reported_before", [None, "failing"])
def test_a_sigstopped_worker_is_reported_after_max_round_and_restarted(
        ops: Ops, fake_docs_factory: Any, reported_before: str | None) -> None:
    docs = fake_docs_factory(sites=1, pages=60, latency_ms=200)
    ops.collector.configure(docs_urls=[f"{docs.url()}/site0/"], stop_timeout=2,
                            health={"max_round": "5s"},
                            spiders={"docs": {"settings": {"CONCURRENT_REQUESTS": 1}}})
    first = start(ops, "--workers", "1", "--spiders", "docs")
    wait_for(lambda: ops.running_workers() == 1, 30, "a running worker")
    worker = next(w["pid"] for w in ops.status()["workers"] if w["pid"])
    os.kill(worker, signal.SIGSTOP)
    try:
        quiet = ops.run("watchdog")  # not yet past max_round
        assert (quiet.returncode, quiet.stdout) == (0, "")
        time.sleep(5.5)
        if reported_before:  # already said unhealthy for another reason: the hang is news
            write_health_memory(ops.layout.health_memory,
                                HealthMemory({"docs": reported_before}))
        result = ops.run("watchdog")
    finally:
        with contextlib.suppress(ProcessLookupError):  # killed by the restart
            os.kill(worker, signal.SIGCONT)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout
    assert lines[0].startswith("collector unhealthy: docs 1/1 shards hung (round running ")
    assert lines[0].endswith("> max 5s); restarting")
    assert lines[1] == "collector restarted: 1 worker"
    assert first.wait(timeout=10) == 0
    assert ops.runner_pid() not in (None, first.pid)

    # The restarted runner logs to runner.log through its stderr as well: each warning once.
    new_worker = wait_for(lambda: ops.running_workers() == 1 and next(
        w["pid"] for w in ops.status()["workers"] if w["pid"]), 30, "the new worker")
    os.kill(new_worker, signal.SIGKILL)
    wait_for(lambda: "restarting in" in ops.layout.runner_log.read_text(), 20, "a warning")
    assert ops.run("stop").returncode == 0
    log = ops.layout.runner_log.read_text().splitlines()
    warnings = [line for line in log if "ended (killed by SIGKILL); restarting in" in line]
    assert len(warnings) == 1, warnings
    assert log[-1].endswith("INFO: stopped (exit status 0)")


EMPTY_TRENDING = "<html><body><main><h1>Trending</h1><p>No rows today.</p></main></body></html>"


@pytest.mark.timeout(120)
def test_a_trending_page_with_no_rows_is_unhealthy_with_its_url(
        ops: Ops, tmp_path: Path, fake_github_factory: Any) -> None:
    pages = tmp_path / "trending"
    pages.mkdir()
    (pages / "empty.html").write_text(EMPTY_TRENDING)
    github = fake_github_factory(trending_fixtures=str(pages))
    ops.collector.configure(github=github, stop_timeout=3, spiders={
        "trending": {"languages": [""], "periods": ["daily"], "settings": NO_RETRY}})
    start(ops, "--workers", "1", "--spiders", "trending")
    wait_for(lambda: any(f["empty_listings"] for f in worker_files(ops.collector)), 60,
             "an empty listing page")
    result = ops.run("watchdog")
    assert result.returncode == 0, result.stderr
    url = f"{github.url('web')}/trending?since=daily"
    assert result.stdout == f"collector unhealthy: trending 1/1 shards: page parsed to zero " \
                            f"rows: {url}\n"
    shown = ops.run("status")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("trending 0/1 "))
    assert "empty" in lines[row].split(), shown.stdout
    assert lines[row + 1] == f"    page parsed to zero rows: {url}"


# --- status: width, pipes, exit status --------------------------------------------------------


LONG_ERROR = ("DNS lookup failed: no results for hostname lookup: "
              "a-very-long-documentation-host-name.example.org, and then some more words")


def twenty_workers(collector: Collector) -> None:
    """A status as a 20-worker runner writes it, each worker's file beside it."""
    collector.configure()
    state = collector.data_dir / "state"
    plan = {"docs": 12, "trending": 6, "search": 2}
    slots = [SlotRecord(spider=spider, shard=f"{i}/{n}", slug=f"{spider}-{i}of{n}",
                        state="sleeping", rounds=12345, round_pid=100 + i,
                        next_round_at=time.time() + 30, items_total=1234567)
             for spider, n in plan.items() for i in range(n)]
    status = StatusFile()
    status.runner.pid = os.getpid()
    status.runner.started_at = status.runner.updated_at = time.time()
    status.runner.plan = "plan: docs 12 (0/12..11/12), trending 6, search 2 — 20 workers"
    status.runner.planned = 20
    status.workers = slots
    write_status(state / "status.json", status)
    for slot in slots:
        write_worker(state / "workers" / f"{slot.slug}.json", WorkerRecord(
            spider=slot.spider, shard=slot.shard, pid=slot.round_pid, items=9876,
            pages=99999, requests=5, failed_rounds=5, first_error=LONG_ERROR,
            items_total=7654321))


def test_status_fits_80_columns_with_20_workers(collector: Collector) -> None:
    twenty_workers(collector)
    lock = PidFile(collector.data_dir / "state" / "runner.pid")
    lock.acquire()  # this test process is "the runner": alive
    try:
        result = collector.runner("status")
    finally:
        lock.release()
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    row = next(i for i, line in enumerate(lines) if line.startswith("docs 11/12 "))
    assert "failing" in lines[row]
    assert lines[row + 1].startswith("    DNS lookup failed: no results for hostname lookup: ")
    assert lines[row + 1].endswith("…")
    # Totals come from the workers' kept counters, not from this runner's rounds.
    assert "total: 153086420 items" in result.stdout


def test_status_exit_3_and_broken_pipes(collector: Collector) -> None:
    twenty_workers(collector)
    not_running = collector.runner("status")
    assert not_running.returncode == 3 and "NOT RUNNING" in not_running.stdout
    lock = PidFile(collector.data_dir / "state" / "runner.pid")
    lock.acquire()
    try:
        for args in (["status"], ["status", "--json"]):
            proc = subprocess.Popen([*RUNNER, *args], cwd=collector.home, env=collector.env(),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            assert proc.stdout is not None
            proc.stdout.close()  # the reader is gone before the first byte: a broken pipe
            _, err = proc.communicate(timeout=60)
            assert (proc.returncode, err) == (0, ""), (args, err)
        for pipe in ("status | head -1", "status --json | head -c 10"):
            shell = subprocess.run(
                ["bash", "-c", f"set -o pipefail; {' '.join(RUNNER)} {pipe}"],
                cwd=collector.home, env=collector.env(), capture_output=True, text=True,
                timeout=60)
            assert (shell.returncode, shell.stderr) == (0, ""), (pipe, shell.stderr)
    finally:
        lock.release()


def test_budget_rows_of_identities_no_longer_configured_are_hidden(
        collector: Collector) -> None:
    from scraper.budget.limits import identity_for_token

    port = closed_port()
    collector.configure()
    collector.update_config({"github": {"web_url": f"http://127.0.0.1:{port}",
                                        "api_url": f"http://127.0.0.1:{port}"},
                             "spiders": {"search": {"settings": NO_RETRY}}})
    db = collector.data_dir / "state" / "budget.sqlite"
    old = identity_for_token("an-old-token")
    crawl = collector.crawl("search", env=collector.env(GITHUB_TOKEN="an-old-token"),
                            timeout=60)  # closed API: books nothing, creates the store
    assert db.exists(), crawl.stderr
    conn = sqlite3.connect(db)
    try:
        identities = {row[0] for row in conn.execute("SELECT identity FROM buckets")}
    finally:
        conn.close()
    assert old in identities
    shown = json.loads(collector.runner("status", "--json").stdout)
    assert not [row for row in shown["budget"] if row["identity"].startswith("token …")]


@pytest.mark.timeout(120)
def test_a_refused_connection_costs_no_github_budget(collector: Collector) -> None:
    port = closed_port()
    collector.configure(spiders={"search": {"queries": ["a", "b", "c", "d"],
                                            "settings": {"RETRY_TIMES": 1}}})
    collector.update_config({"github": {"web_url": f"http://127.0.0.1:{port}",
                                        "api_url": f"http://127.0.0.1:{port}",
                                        "limits": {"search": {"limit": 36000, "window": "1h"}}}})
    done = collector.crawl("search", timeout=90)
    assert done.returncode == NOTHING_FETCHED_EXIT, done.stderr
    # 8 requests refused, each paced through the budget: GitHub saw none of them, none is
    # booked.
    shown = json.loads(collector.runner("status", "--json").stdout)
    search = next(row for row in shown["budget"] if row["resource"] == "search")
    assert search["remaining"] == 36000, search
    assert collector.stats("search")["downloader/exception_count"] >= 8  # + the probe


# --- the command line -------------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["statsu"],
     "python -m runner: unknown command 'statsu' (run, status, stop, reload, watchdog, "),
    (["--wokers", "4"], "python -m runner: unknown option --wokers"),
    (["status", "--jsno"], "python -m runner: unknown option --jsno"),
])
def test_unknown_commands_and_options(collector: Collector, args: list[str],
                                      message: str) -> None:
    collector.configure()
    result = collector.runner(*args)
    assert result.returncode == 2
    assert result.stderr.startswith(message), result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_help_lists_every_subcommand_with_a_line(collector: Collector) -> None:
    import runner.cli.main

    result = collector.runner("--help")
    assert result.returncode == 0
    for name in runner.cli.main.COMMANDS:
        assert any(line.split()[:1] == [name] and len(line.split()) > 1
                   for line in result.stdout.splitlines()), (name, result.stdout)


def test_install_cron_dry_run_without_crontab_warns_about_the_token(
        collector: Collector, tmp_path: Path) -> None:
    collector.configure()
    bare = tmp_path / "bin"  # a PATH without crontab
    bare.mkdir()
    env = collector.env(PATH=str(bare), GITHUB_TOKEN="ghp_in_this_shell_only")
    result = collector.runner("install-cron", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    assert "watchdog.sh" in result.stdout
    assert result.stderr.count("\n") == 1
    assert "$GITHUB_TOKEN is set in this shell but cron's jobs do not get it" in result.stderr
    assert "ghp_in_this_shell_only" not in result.stdout + result.stderr


def test_a_version_1_worker_file_reads_with_the_new_fields_defaulted(tmp_path: Path) -> None:
    from scraper.utils.statefile import STATE_VERSION, read_worker

    path = tmp_path / "docs-0of1.json"
    path.write_text(json.dumps({"spider": "docs", "shard": "0/1", "pid": 7, "items": 3,
                                "pages": 4, "finished": "finished", "version": 1}))
    record = read_worker(path)
    assert record is not None and STATE_VERSION == 2
    assert (record.version, record.items, record.items_total, record.failed_rounds,
            record.responses, record.first_error) == (1, 3, 0, 0, {}, None)
