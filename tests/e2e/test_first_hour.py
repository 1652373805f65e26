"""A Scrapy user's first hour with the project: its logs, Scrapy's own tools, exports, exit
statuses; each through the user's real command."""

from __future__ import annotations

import csv
import functools
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import weakref
from typing import Any

import pytest
import yaml

from runner.supervision import interrupt
from runner.supervision.autoscale import CpuSample, Snapshotter
from scraper.utils.layout import DataLayout
from scraper.utils.outcome import NOTHING_FETCHED_EXIT
from scraper.utils.statefile import read_json
from tests.support.collector import (
    FAST_SETTINGS,
    REPO_ROOT,
    RUNNER,
    SCRAPY,
    Collector,
    free_port,
    wait_for,
)


def test_a_rounds_log_has_no_startup_inventory_unless_asked(collector: Collector,
                                                            fake_docs) -> None:
    collector.configure(docs_urls=[f"{fake_docs.url()}/site0/"])
    result = collector.crawl("docs")
    assert result.returncode == 0, result.stderr[-2000:]
    log = collector.log("docs")
    assert "Scrapy 2." in log and "Spider closed (finished)" in log
    for boilerplate in ("Enabled extensions", "Enabled downloader middlewares",
                        "Enabled item pipelines", "Enabled addons", "Overridden settings"):
        assert boilerplate not in log, boilerplate
    quiet = len(log.encode())

    result = collector.crawl("docs", None, "-s", "LOG_STARTUP_COMPONENTS=1",
                             "-a", "deltafetch_reset=1")
    assert result.returncode == 0, result.stderr[-2000:]
    loud = collector.log("docs")[len(log):]
    assert "Enabled extensions" in loud and "Overridden settings" in loud
    assert len(loud.encode()) - quiet > 3000


def no_round_written(collector: Collector) -> None:
    for what in ("items", "state/workers", "state/ledger", "logs"):
        where = collector.data_dir / what
        assert not where.exists() or not any(where.iterdir()), what


def test_scrapy_fetch_shell_and_parse_work_and_write_nothing(collector: Collector,
                                                              fake_docs) -> None:
    site = f"{fake_docs.url()}/site0/"
    collector.configure(docs_urls=[site])

    fetched = collector.scrapy("fetch", "--nolog", site)
    assert fetched.returncode == 0, fetched.stderr[-2000:]
    assert "<html" in fetched.stdout and "Site 0 Docs" in fetched.stdout

    shell = collector.scrapy("shell", site, "--nolog", "-c",
                             "(response.status, response.css('title::text').get())")
    assert shell.returncode == 0, shell.stderr[-2000:]
    assert shell.stdout.startswith("(200, ") and "Site 0 Docs" in shell.stdout

    parsed = collector.scrapy("parse", site, "--spider", "docs", "--nolog")
    assert parsed.returncode == 0, parsed.stderr[-2000:]
    assert "Traceback" not in parsed.stderr, parsed.stderr[-2000:]
    items, requests = parsed.stdout.split("# Requests")
    assert f"'url': '{site}'" in items and "'markdown':" in items
    assert f"<GET {site}page1.html>" in requests
    no_round_written(collector)


def test_scrapy_parse_a_trending_page_by_hand(collector: Collector, fake_github) -> None:
    collector.configure(github=fake_github)
    url = f"{fake_github.url('web')}/trending/python?since=weekly"
    parsed = collector.scrapy("parse", url, "--spider", "trending", "--nolog")
    assert parsed.returncode == 0, parsed.stderr[-2000:]
    items = parsed.stdout.split("# Requests")[0]
    assert items.count("'full_name':") >= 25
    assert "'period': 'weekly'" in items and "'trending_language': 'python'" in items
    no_round_written(collector)


def test_scrapy_crawl_from_a_subdirectory_finds_collector_yaml_above(tmp_path, fake_docs) -> None:
    project = tmp_path / "checkout"
    (project / "notes" / "deeper").mkdir(parents=True)
    (project / "scrapy.cfg").write_text((REPO_ROOT / "scrapy.cfg").read_text())
    (project / "collector.yaml").write_text(yaml.safe_dump({
        "data_dir": "collected",
        "spiders": {"docs": {"start_urls": [f"{fake_docs.url()}/site0/"],
                             "settings": FAST_SETTINGS}}}))
    env = {k: v for k, v in os.environ.items() if k != "COLLECTOR_CONFIG"}
    here = project / "notes" / "deeper"
    result = subprocess.run([*SCRAPY, "crawl", "docs"], cwd=here, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert list((project / "collected" / "items" / "docs").glob("docs-0of1-*.jsonl"))
    assert sorted(p.name for p in here.iterdir()) == []


@pytest.mark.parametrize(("option", "message"), [
    ("DELTAFETCH_RESET=maybe",
     "scrapy crawl: -s DELTAFETCH_RESET='maybe' is not valid: expected 1 or 0 (true/false; "
     "default 0)"),
    ("CONCURRENT_REQUESTS=abc",
     "scrapy crawl: -s CONCURRENT_REQUESTS='abc' is not valid: expected a number (default 16)"),
])
def test_a_bad_dash_s_setting_is_one_line_and_exit_2(collector: Collector, option: str,
                                                     message: str) -> None:
    collector.configure(docs_urls=["http://127.0.0.1:9/"])
    result = collector.crawl("docs", None, "-s", option)
    assert (result.returncode, result.stderr) == (2, message + "\n")
    assert not collector.log("docs")


def test_a_bad_spider_setting_in_the_config_is_one_line_and_exit_2(collector: Collector) -> None:
    collector.configure(docs_urls=["http://127.0.0.1:9/"],
                        spiders={"docs": {"settings": {"CONCURRENT_REQUESTS": "abc"}}})
    line = (f"{collector.config_path}: spiders.docs.settings.CONCURRENT_REQUESTS: 'abc' is not "
            "a number (default 16)\n")
    crawl = collector.crawl("docs")
    assert (crawl.returncode, crawl.stderr) == (2, "scrapy crawl: " + line)
    once = collector.runner("--once", "--workers", "1", "--spiders", "docs")
    assert (once.returncode, once.stderr) == (2, "python -m runner: " + line)


def test_scrapy_crawl_that_fetched_nothing_says_why_and_exits_5(collector: Collector) -> None:
    collector.configure(docs_urls=[f"http://127.0.0.1:{free_port()}/docs/"],
                        spiders={"docs": {"settings": {"RETRY_TIMES": 0}}})
    result = collector.crawl("docs")
    assert result.returncode == NOTHING_FETCHED_EXIT, result.stderr[-2000:]
    summary = result.stderr.strip().splitlines()[-1]
    assert summary.startswith("docs 0/1: 0 pages, 0 new items")
    assert summary.endswith("(nothing new written); fetched nothing in 2 requests "
                            f"({collector.worker_state('docs')['first_error']})")
    assert "Connection was refused" in summary


def test_a_robots_txt_is_no_data_a_round_whose_pages_all_failed_exits_5(
        collector: Collector, tmp_path) -> None:
    www = tmp_path / "www"
    www.mkdir()
    (www / "robots.txt").write_text("User-agent: *\nAllow: /\n")  # and no /docs/ at all
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(www))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        collector.configure(docs_urls=[f"http://127.0.0.1:{server.server_port}/docs/"])
        result = collector.crawl("docs")
    finally:
        server.shutdown()
    assert result.returncode == NOTHING_FETCHED_EXIT, result.stderr[-2000:]
    summary = result.stderr.strip().splitlines()[-1]
    assert "fetched nothing in 2 requests" in summary, summary
    assert collector.worker_state("docs")["failed_rounds"] == 1


@pytest.mark.timeout(120)
def test_foreground_runner_says_once_when_a_spider_gets_no_data_and_once_when_it_flows(
        collector: Collector, tmp_path) -> None:
    port = free_port()
    site = tmp_path / "www" / "site"
    site.mkdir(parents=True)
    (site / "index.html").write_text("<html><head><title>Back</title></head>"
                                     "<body><h1>Back</h1><p>up again</p></body></html>")
    collector.configure(docs_urls=[f"http://127.0.0.1:{port}/site/"], stop_timeout=3,
                        spiders={"docs": {"settings": {"RETRY_TIMES": 0}}})
    runner = collector.start_runner("--workers", "1", "--spiders", "docs")
    runner_log = collector.data_dir / "logs" / "runner.log"

    def logged(text: str) -> bool:
        return runner_log.exists() and text in runner_log.read_text()

    server = None
    try:
        wait_for(lambda: logged("docs: no data: shard 0/1 fetched nothing in 2 requests "
                                f"(127.0.0.1:{port}: Connection was refused"), 60,
                 "the no-data line")
        wait_for(lambda: collector.worker_state("docs")["failed_rounds"] >= 3, 60,
                 "three failed rounds")
        handler = functools.partial(http.server.SimpleHTTPRequestHandler,
                                    directory=str(tmp_path / "www"))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        wait_for(lambda: logged("docs: data flows again (shard 0/1: "), 60, "the recovery line")
    finally:
        runner.send_signal(signal.SIGTERM)
        _, err = runner.communicate(timeout=30)
        if server is not None:
            server.shutdown()
    assert err.count("docs: no data:") == 1, err
    assert err.count("docs: data flows again") == 1, err


def test_cpu_ratio_stays_within_0_and_1_whatever_the_float_sums() -> None:
    snapshotter = Snapshotter()
    snapshotter.add(CpuSample(0.0, 10.0, 10.0))
    snapshotter.add(CpuSample(2.0, 12.0000000000001, 12.0))
    assert snapshotter.cpu_ratio() == 1.0
    snapshotter.add(CpuSample(4.0, 11.9999999999999, 14.0))
    assert 0.0 <= snapshotter.cpu_ratio() <= 1.0


def test_readme_memory_guard_example_refuses(tmp_path) -> None:
    """README's example, as written there, with the built-in defaults."""
    env = {k: v for k, v in os.environ.items() if k != "COLLECTOR_CONFIG"}
    result = subprocess.run([*RUNNER, "--workers", "100", "--memory-budget", "1G"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stdout.startswith("plan: ") and "28 workers" in result.stdout
    assert re.fullmatch(r"python -m runner: refusing 28 workers: estimate 1\.\d GB \(parent \d+ MB "
                        r"\+ 28 × 40 MB \(guess\)\) exceeds 80% of the memory budget 1\.0 GB "
                        r"\(--memory-budget/memory_budget\); the largest safe --workers is \d+ "
                        r"\(--force to start anyway\)\n", result.stderr), result.stderr
    assert list(tmp_path.iterdir()) == []


def test_once_status_json_times_are_iso_and_one_page_is_singular(collector: Collector,
                                                                 fake_github) -> None:
    collector.configure(github=fake_github,
                        spiders={"trending": {"languages": [""], "periods": ["daily"]}})
    crawl = collector.crawl("trending")
    assert crawl.returncode == 0, crawl.stderr[-2000:]
    assert crawl.stderr.splitlines()[-1].startswith("trending 0/1: 1 page, 26 new items, ")
    once = collector.runner("--once", "--workers", "1", "--spiders", "trending")
    assert once.returncode == 0, once.stderr
    assert "— 1 worker\n" in once.stdout
    # the page snapshot is new every round; its 25 rows are not
    assert once.stdout.endswith("trending: 1/1 shards ok, 1 page, 1 new item\n")
    shown = json.loads(collector.runner("status", "--json").stdout)
    moments = []

    def walk(value, key=""):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif key.endswith(("_at", "_since")) and value is not None:
            moments.append(value)
        else:
            assert not (isinstance(value, float) and value > 1e9), (key, value)

    walk(shown)
    assert {"started_at", "updated_at"} <= set(shown["runner"]) and len(moments) >= 3
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", m) for m in moments), moments


def test_feed_exports_are_clean_tables_and_an_export_leaves_data_items_alone(
        collector: Collector, fake_github, tmp_path) -> None:
    collector.configure(github=fake_github,
                        spiders={"trending": {"languages": ["", "python"],
                                              "periods": ["daily"]}})
    out_csv = tmp_path / "out.csv"
    crawl = collector.crawl("trending", None, "-O", str(out_csv))
    assert crawl.returncode == 0, crawl.stderr[-2000:]
    with open(out_csv, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 50
    assert {"full_name", "stars", "forks", "rank", "period"} <= set(rows[0])
    assert "rows" not in rows[0] and all(row["full_name"] for row in rows)
    stored = collector.items("trending")
    assert len(stored) == 52  # the item store keeps the two page snapshots too

    # README's recipe: everything on the pages, whatever was collected before, into a feed
    # only.
    out_json = tmp_path / "out.json"
    again = collector.crawl("trending", None, "-O", str(out_json), "-s", "ITEMSTORE_ENABLED=0",
                            "-a", "deltafetch_reset=1", "-a", "contenthash_reset=1")
    assert again.returncode == 0, again.stderr[-2000:]
    exported = json.loads(out_json.read_text())
    row_shape = {frozenset(item) for item in stored if "full_name" in item}
    assert len(exported) == 50 and {frozenset(item) for item in exported} == row_shape
    assert len(collector.items("trending")) == 52


def runner_of_status(collector: Collector) -> int | None:
    status = read_json(DataLayout(collector.data_dir).status_file) or {}
    return status.get("runner", {}).get("pid")


@pytest.mark.timeout(120)
def test_watchdog_leaves_a_collector_stopped_on_purpose_alone_until_it_is_started(
        collector: Collector, fake_docs) -> None:
    collector.configure(docs_urls=[f"{fake_docs.url()}/site0/"], stop_timeout=3)
    mark = collector.data_dir / "state" / "stopped-on-purpose"
    for attempt in range(2):
        runner = collector.start_runner("--workers", "1", "--spiders", "docs")
        try:
            # status.json names this runner once its supervisor runs (polled as a file: a
            # `status` process each 0.1 s is seconds of CPU taken from the tests beside it)
            wait_for(lambda pid=runner.pid: runner_of_status(collector) == pid, 60,
                     "a running runner")
            assert collector.runner("status").returncode == 0
            assert not mark.exists()  # a started runner is watched again
            if attempt == 0:
                stop = collector.runner("stop")
                assert stop.returncode == 0, stop.stderr
                runner.wait(30)
                watchdog = collector.runner("watchdog")
                assert (watchdog.returncode, watchdog.stdout, watchdog.stderr) == (0, "", "")
                assert collector.runner("status").returncode == 3  # and nothing was started
                assert mark.exists()
        finally:
            if runner.poll() is None:
                runner.send_signal(signal.SIGTERM)
                runner.wait(30)
    # Stopped by a SIGTERM instead, it is restarted as before (test_ops.py's watchdog tests).
    assert not mark.exists()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("delay", [0.5, 1.5])
def test_ctrl_c_while_the_runner_starts_is_a_quiet_exit_130(collector: Collector,
                                                             delay: float) -> None:
    collector.configure(docs_urls=["http://127.0.0.1:9/"], stop_timeout=3)
    runner = collector.start_runner("--workers", "2", "--spiders", "docs")
    time.sleep(delay)  # past the interpreter's own start-up, inside the runner's
    runner.send_signal(signal.SIGINT)
    try:
        _out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:  # a runner that ignored it must not run on beside the suite
            runner.kill()
            runner.wait()
    assert "Traceback" not in err, err
    # Started already (the supervisor's handlers in place): SIGINT is the graceful stop. The
    # plan on stdout does not say so: cmd_run prints it before the preload, which is still the
    # start (README: imports, the preload, the memory estimate). The supervisor logs the plan
    # to runner.log only once its handlers are installed.
    runner_log = collector.data_dir / "logs" / "runner.log"
    if runner_log.exists() and "INFO: plan: " in runner_log.read_text():
        assert runner.returncode == 0, err
    else:
        assert (runner.returncode, err) == (130, "python -m runner: interrupted\n")


class Garbage:
    """Something a weakref can watch."""


def test_a_ctrl_c_swallowed_while_the_runner_starts_still_ends_the_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Python runs a SIGINT handler wherever the main thread is: in a weakref callback that the
    garbage collector runs mid-import, its KeyboardInterrupt is printed as "Exception ignored"
    and dropped, and the runner went on to crawl (the test above hung so, now and then, on a
    busy machine). The start remembers it; the supervisor, its own handlers in place, ends the
    start with it (runner/supervision/interrupt.py)."""
    swallowed: list[type[BaseException] | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda hook: swallowed.append(hook.exc_type))
    monkeypatch.setattr(interrupt, "_interrupted", False)
    before = signal.getsignal(signal.SIGINT)
    try:
        interrupt.remember_interrupts()

        def callback(_: weakref.ref[Any]) -> None:
            os.kill(os.getpid(), signal.SIGINT)
            for _turn in range(10_000):  # the handler runs here, inside the callback
                pass

        garbage = Garbage()
        watch = weakref.ref(garbage, callback)
        del garbage  # the callback runs now; the interrupt raised in it goes nowhere
        assert watch() is None and swallowed == [KeyboardInterrupt]
        with pytest.raises(KeyboardInterrupt):
            interrupt.raise_if_interrupted()
    finally:
        signal.signal(signal.SIGINT, before)
