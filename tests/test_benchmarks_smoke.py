"""The benchmarks end to end on a tiny workload: they run, print and write their results.

Never a timed test: nothing here looks at a speed, a size or a ratio, only that every contender
ran and reported.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import REPO_ROOT

CONTENDERS = {"scrapy crawl docs", "plain Scrapy", "runner-2", "predecessor-2"}


def bench(*args: str, env: dict[str, str] | None = None,
          timeout: float = 150) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", *args], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=timeout, env={**os.environ, **(env or {})})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def check_workload(workload: dict[str, Any]) -> None:
    rows = {row["name"]: row for row in workload["rows"]}
    assert set(rows) >= CONTENDERS
    assert "crawlee" in rows or "crawlee" in workload["skipped_contenders"]
    for row in rows.values():
        assert row["returncode"] == 0, row
        assert row["pages"] > 0, row
        assert row["wall_s"] > 0 and row["cpu_s"] > 0, row


@pytest.mark.timeout(150)
def test_throughput_tiny_runs_every_contender(tmp_path: Path) -> None:
    out = tmp_path / "throughput.json"
    result = bench("benchmarks.throughput", "--scale", "tiny", "--workloads", "latency",
                   "--out", str(out))
    data = json.loads(out.read_text())
    assert data["scale"] == "tiny"
    assert {"nproc", "ram_mb", "python", "scrapy"} <= set(data["machine"])
    check_workload(data["workloads"]["latency"])
    assert "pages/s" in result.stdout and "plain Scrapy" in result.stdout
    if "plot skipped" not in result.stdout:
        assert out.with_suffix(".png").stat().st_size > 0


@pytest.mark.timeout(90)
def test_throughput_cpu_workload_is_served_by_nginx(tmp_path: Path) -> None:
    """The ``cpu`` workload's server, nginx, with two contenders: every contender's run is
    the latency workload's code (above); what differs is the server."""
    out = tmp_path / "throughput.json"
    result = bench("benchmarks.throughput", "--scale", "tiny", "--workloads", "cpu",
                   "--only", "scrapy crawl docs,runner-2", "--out", str(out), "--plot", "none")
    cpu = json.loads(out.read_text())["workloads"]["cpu"]
    if "skipped" in cpu:  # no nginx here: skipped with the reason printed, not failed
        assert "nginx" in cpu["skipped"]
        assert "skipped" in result.stdout
        return
    rows = {row["name"]: row for row in cpu["rows"]}
    assert set(rows) == {"scrapy crawl docs", "runner-2"}
    for row in rows.values():
        assert row["returncode"] == 0 and row["pages"] > 0, row


@pytest.mark.timeout(60)
def test_throughput_without_nginx_skips_the_cpu_workload(tmp_path: Path) -> None:
    out = tmp_path / "throughput.json"
    result = bench("benchmarks.throughput", "--scale", "tiny", "--workloads", "cpu",
                   "--out", str(out), "--plot", "none",
                   env={"HUBCOLLECT_BENCH_NGINX": str(tmp_path / "no-nginx")})
    data = json.loads(out.read_text())
    assert "nginx is not installed" in data["workloads"]["cpu"]["skipped"]
    assert "skipped: nginx is not installed" in result.stdout


@pytest.mark.timeout(120)
def test_memory_tiny_measures_runner_cold_and_rounds(tmp_path: Path) -> None:
    out = tmp_path / "memory.json"
    result = bench("benchmarks.memory", "--scale", "tiny", "--out", str(out))
    data = json.loads(out.read_text())
    for phase in ("runner", "cold"):
        assert data[phase]["workers"] == data["workers"]
        assert data[phase]["tree_pss_mb"] > 0
        assert data[phase]["start_to_all_crawling_s"] >= 0
    assert data["runner"]["parent_pss_mb"] > 0
    assert data["ratio_tree_pss"] > 0
    assert data["rounds"]["late"]["tree_pss_mb"] > 0
    assert "tree PSS" in result.stdout


@pytest.mark.timeout(150)
def test_stores_tiny_measures_both_layouts(tmp_path: Path) -> None:
    out = tmp_path / "stores.json"
    result = bench("benchmarks.stores", "--workers", "3", "--items", "20", "--repeat", "1",
                   "--work-ms", "0", "0.5", "--out", str(out))
    runs = json.loads(out.read_text())["runs"]
    assert [(r["layout"], r["work_ms"]) for r in runs] == [
        ("private", 0.0), ("shared", 0.0), ("private", 0.5), ("shared", 0.5)]
    assert all(r["items"] == 60 and r["cpu_s"] > 0 for r in runs)
    assert "share_of_page_cpu" in runs[1] and "× private" in result.stdout


@pytest.mark.timeout(120)
def test_catalog_tiny_measures_build_and_incremental_round(tmp_path: Path) -> None:
    out = tmp_path / "catalog.json"
    result = bench("benchmarks.catalog", "--items", "3000", "--per-file", "500", "--out",
                   str(out))
    data = json.loads(out.read_text())
    assert data["items"] == 3000 and data["files"] >= 3000 // 500
    for phase in ("baseline_parse_only", "build", "noop_rerun", "incremental"):
        assert data[phase]["wall_s"] > 0 and data[phase]["peak_rss_mb"] > 0, phase
    assert "catalog: 0 new files" in data["noop_rerun"]["stdout"]
    assert data["tables"]["trending_observations"] > 0
    assert "items/s" in result.stdout


@pytest.mark.timeout(150)
def test_catalogio_measures_writes_of_every_build_for_new_and_old_code(tmp_path: Path) -> None:
    out = tmp_path / "catalogio.json"
    result = bench("benchmarks.catalogio", "--days", "2", "--catch-up-from", "1",
                   "--baseline", str(REPO_ROOT), "--out", str(out))
    data = json.loads(out.read_text())
    for code in ("new", "old"):
        for step in ("first_build", "head_build", "catch_up", "incremental"):
            measured = data[code][step]
            assert measured["write_bytes"] > 0 and measured["catalog_bytes"] > 0, (code, step)
            assert "new files" in measured["stdout"], (code, step)
        if "skipped" not in data[code]["datasette"]:
            pages = data[code]["datasette"]["pages"]
            assert {"table repo_stars", "row repo_stars", "query rising_this_week"} <= set(pages)
    assert "first_build  old:" in result.stdout and "datasette new:" in result.stdout


@pytest.mark.timeout(60)
def test_startup_measures_every_step_of_a_forked_worker(tmp_path: Path) -> None:
    out = tmp_path / "startup.json"
    result = bench("benchmarks.startup", "--workers", "2", "--out", str(out))
    data = json.loads(out.read_text())
    assert len(data["runs"]) == 2
    # every step was reached: a worker that failed to crawl would miss spider_opened onwards
    assert set(data["steps"]) == {"process_options", "crawler", "spider_opened",
                                  "engine_started", "first response", "spider_closed", "exit",
                                  "total"}
    assert data["steps"]["total"]["cpu_ms"] > 0 and data["steps"]["total"]["faults"] > 0
    assert "process_options" in result.stdout


@pytest.mark.timeout(150)
def test_parent_samples_the_runner_parent_over_real_rounds(tmp_path: Path) -> None:
    out = tmp_path / "parent.json"
    # Rounds are counted from status.json, written every 2 s: one write may count all 24 rounds,
    # and the benchmark then waits for the next write rather than judge one sample.
    result = bench("benchmarks.parent", "--rounds", "24", "--samples", "4", "--out", str(out))
    data = json.loads(out.read_text())
    assert data["rounds"] >= 24 and len(data["samples"]) >= 2, data["samples"]
    assert all(s["rss_mb"] > 10 and s["fds"] > 2 for s in data["samples"]), data["samples"]
    assert isinstance(data["flat"], bool)
    assert "descriptors " in result.stdout and "in the second: " in result.stdout
    assert "results: " in result.stdout


@pytest.mark.timeout(120)
def test_history_store_times_open_both_stores_in_fresh_processes(tmp_path: Path) -> None:
    """The year benchmark's store step (``benchmarks.history.store_times``) at a small size:
    it builds each store with the store classes and opens it as a worker does."""
    from benchmarks.history import store_times

    result = store_times(tmp_path, 2000)
    for kind in ("deltafetch", "contenthash"):
        assert result[kind]["open_s"] > 0 and result[kind]["quick_check_s"] > 0, result
        assert result[kind]["bytes"] > 2000 * 20, result


@pytest.mark.timeout(120)
def test_commands_measures_each_short_command_against_a_scrapy_import(tmp_path: Path) -> None:
    out = tmp_path / "commands.json"
    result = bench("benchmarks.commands", "--repeat", "1", "--days", "0", "--before", "",
                   "--out", str(out))
    rows = {row["command"]: row for row in json.loads(out.read_text())["rows"]}
    assert {"python -c pass", "import scrapy", "runner status", "runner metrics",
            "runner watchdog", "runner size --every 100MB", "runner stop",
            "runner catalog"} == set(rows)
    assert all(row["cpu_s"] > 0 for row in rows.values()), rows
    assert rows["import scrapy"]["imports_scrapy"]
    # None of the commands cron runs imports Scrapy just to read the config.
    assert not [name for name, row in rows.items()
                if name.startswith("runner ") and row["imports_scrapy"]], rows
    assert "× import scrapy" in result.stdout


@pytest.mark.timeout(180)
def test_commands_at_a_year_runs_each_command_from_the_old_tree_too(tmp_path: Path) -> None:
    out = tmp_path / "commands.json"
    bench("benchmarks.commands", "--repeat", "1", "--days", "1", "--before", str(REPO_ROOT),
          "--out", str(out))
    rows = {row["command"]: row for row in json.loads(out.read_text())["rows"]}
    runner = {"runner status", "runner metrics", "runner watchdog", "runner size --every 100MB",
              "runner stop"}  # no catalog: a first build of --days of segments is not short
    assert {"python -c pass", "import scrapy", *runner,
            *(f"{name} (before)" for name in runner)} == set(rows)
    # The same data dir, the same answers: status 3 (no runner), watchdog 1 (no command line)
    assert all(rows[name]["exit"] == rows[f"{name} (before)"]["exit"] for name in runner), rows


@pytest.mark.timeout(120)
def test_datasize_measures_the_walk_and_the_kept_sizes_on_one_data_dir(tmp_path: Path) -> None:
    out = tmp_path / "datasize.json"
    result = bench("benchmarks.datasize", "--days", "1", "--repeat", "1", "--out", str(out))
    data = json.loads(out.read_text())
    assert data["item_files"] == 24 * 22 + 22  # a day of closed segments, one open per shard
    assert [row["what"] for row in data["rows"]] == [
        "walk (before)", "kept sizes (after)", "status (before)", "status (after)",
        "metrics (before)", "metrics (after)", "size sample (after)", "first count (once)"]
    assert "× walk" in result.stdout


def test_trending_pages_are_read_back_as_the_rows_they_show() -> None:
    """The generated history's trending bodies (``benchmarks/trendingpages.py``): the spider's
    parser reads from each exactly the rows the generator says it shows, every fetch is a new
    page with its per-request values cut out (a new template to the archive's earlier form),
    and two lists share no repository."""
    from benchmarks.trendingpages import TrendingPages
    from scraper.trending.archive import body_sha256
    from scraper.trending.repositories import parse_trending
    from tests.support.gziparchive import split_volatile

    pages = TrendingPages()
    url = "https://github.com/trending/rust?since=weekly"
    templates = set()
    for hour in range(3):
        body, rows = pages.page(5, "weekly", hour, url)
        assert parse_trending(body, url) == rows
        templates.add(body_sha256(split_volatile(body)[0]))
    assert len(templates) == 3
    other, _ = pages.page(6, "weekly", 2, url)
    assert {row.full_name for row in parse_trending(other, url)}.isdisjoint(
        row.full_name for row in rows)


@pytest.mark.timeout(300)
def test_history_fills_every_part_of_the_data_dir_and_status_forecasts_it(
        tmp_path: Path) -> None:
    """A day of ``python -m benchmarks.history`` with small docs sites: every part of the data
    dir is written, through the real stores, and ``status --json`` forecasts from its samples."""
    out, work = tmp_path / "history.json", tmp_path / "work"
    result = bench("benchmarks.history", "--days", "1", "--docs-pages", "5", "--catalog-every",
                   "12", "--workdir", str(work), "--out", str(out), timeout=300)
    data = json.loads(out.read_text())
    parts = data["daily"][-1]["parts"]
    assert all(size > 0 for name, size in parts.items() if name != "other"), parts
    assert data["status"]["growth_per_day_bytes"] > 0, data["status"]
    assert data["round_log_bytes"].keys() == {"trending", "search", "docs"}
    state = work / "home" / "data" / "state"
    with sqlite3.connect(state / "archive" / "trending.sqlite") as conn:
        fetches = conn.execute("SELECT count(*) FROM served").fetchone()[0]
    assert fetches == 12 * 24  # every list, every hour
    items = work / "home" / "data" / "items" / "trending"
    closed, still_open = list(items.glob("*.jsonl")), list(items.glob("*.jsonl.part"))
    # Each shard's hourly segment; the last one open, unless the last catalog build (on the
    # real clock) found its hour past and closed it, as its shard's next round would.
    assert len(closed) + len(still_open) == 6 * 24 and len(still_open) in (0, 6), still_open
    assert "no growth per day from less than 2 days" in result.stdout


@pytest.mark.timeout(120)
def test_archive_measures_both_forms_on_every_phase(tmp_path: Path) -> None:
    out = tmp_path / "archive.json"
    result = bench("benchmarks.archive", "--lists", "2", "--hours", "1", "--unchanged", "2",
                   "--out", str(out), timeout=120)
    data = json.loads(out.read_text())
    for form in ("gzip templates", "zstd frames"):
        assert set(data[form]) == {"distinct", "unchanged", "unchanged_developers"}
        assert all(row["fetches"] > 0 and row["cpu_ms_mean"] > 0 for row in data[form].values())
    assert data["floor_bytes"]["repositories"] > data["floor_bytes"]["developers"] > 0
    assert set(data["targets"]) == {"distinct_bytes", "unchanged_bytes", "cpu_ms"}
    assert "floor (random bytes drawn per fetch)" in result.stdout


@pytest.mark.timeout(60)
def test_ledger_benchmark_reads_what_it_wrote(tmp_path: Path) -> None:
    out = tmp_path / "ledger.json"
    result = bench("benchmarks.ledger", "--days", "2", "--scales", "1", "--out", str(out))
    (row,) = json.loads(out.read_text())["rows"]
    assert row["lines"] > 0 and row["status_cold_ms"] > 0 and row["gaps_7d_ms"] > 0
    assert "status cold ms" in result.stdout


@pytest.mark.timeout(300)
def test_pagecost_tiny_measures_both_spiders_against_plain_scrapy(tmp_path: Path) -> None:
    """Every docs page (every generator's) is parsed into one item by both docs contenders, the
    trending contenders write rows, and each step of a page is timed. Eight crawls: about 30 s,
    150 s under nice beside a busy loop on a loaded box, hence the timeout."""
    out = tmp_path / "pagecost.json"
    result = bench("benchmarks.pagecost", "--scale", "tiny", "--out", str(out), timeout=300)
    data = json.loads(out.read_text())
    runs = data["rounds"][0]
    assert set(runs) == {"scrapy crawl docs", "plain Scrapy (docs)", "scrapy crawl trending",
                         "plain Scrapy (trending)"}
    for name in ("scrapy crawl docs", "plain Scrapy (docs)"):
        for size in ("small", "large"):
            assert runs[name][size]["items"] == runs[name][size]["pages"] >= 32, runs[name]
    for name in ("scrapy crawl trending", "plain Scrapy (trending)"):
        assert runs[name]["large"]["items"] >= 20 * runs[name]["large"]["pages"] > 0
    assert set(data["ratios"]) == {"docs", "trending"}
    assert "Markdown and text (one walk)" in data["docs_steps"]
    assert "vs plain Scrapy" in result.stdout and "fidelity check" in result.stdout



@pytest.mark.timeout(300)
def test_fidelity_times_both_versions_and_tells_a_different_reading(tmp_path: Path) -> None:
    """The check of this tree against a copy of it reads every page the same; against a copy
    that reads the Markdown's text back with a mark between its lines, it says DIFFERENT and
    exits 1. Four timing processes: 8 s, about 65 s under nice beside a busy loop on a loaded
    box, hence the timeouts."""
    same = tmp_path / "same.json"
    result = bench("benchmarks.fidelity", "--before", str(REPO_ROOT), "--repeat", "1",
                   "--passes", "1", "--pages", "3", "--out", str(same), timeout=140)
    data = json.loads(same.read_text())
    assert data["identical"] and data["pages"] == 3, data
    (before,), (after,) = data["runs"]["before"], data["runs"]["after"]
    assert "hubcollect-fidelity-" in before["loaded"] and after["loaded"] == str(
        REPO_ROOT / "scraper" / "docpages" / "fidelity.py")
    assert all(ms > 0 for ms in after["steps"].values()), after
    assert "what the check read: identical" in result.stdout
    changed = tmp_path / "changed"
    shutil.copytree(REPO_ROOT / "scraper", changed / "scraper",
                    ignore=shutil.ignore_patterns("__pycache__"))
    module = changed / "scraper" / "docpages" / "readback.py"
    source = module.read_text()
    assert 'reading.plain = "".join(plain)' in source
    module.write_text(source.replace('reading.plain = "".join(plain)',
                                     'reading.plain = "|".join(plain)'))
    differs = subprocess.run(
        [sys.executable, "-m", "benchmarks.fidelity", "--before", str(changed), "--repeat", "1",
         "--passes", "1", "--pages", "3", "--out", str(tmp_path / "changed.json")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=140)
    assert differs.returncode == 1, differs.stdout + differs.stderr
    assert "what the check read: DIFFERENT" in differs.stdout
