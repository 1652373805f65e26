"""kill -9, many times: nothing lost, nothing corrupt, no store reset, duplicates only by kills.

A runner with 6 workers (docs 4 sites, search, trending) against the fake servers, round_interval
0.5 s. A killer SIGKILLs random running workers (pids from state/status.json, checked against
the runner's children) at random instants, at least 30 times, and SIGKILLs the runner itself
twice, restarting it with the same command as the watchdog would; every time the runner dies,
its workers must die with it (PR_SET_PDEATHSIG). Then a clean ``--once`` run, and the checks.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from tests.support.collector import RUNNER, Collector, wait_for

SEED = 20260504
WORKERS = "6"
MIN_WORKER_KILLS = 30
RUNNER_KILLS = 2
CHAOS_MAX_S = 180.0
SEARCH_QUERIES = ["alpha", "few"]
SEGMENTS = {"ITEMSTORE_SEGMENT_SECONDS": 4}
"""Rounds append to segments that close every few seconds: kills land on open segments (their
torn tail cut at the next start), on closing ones and between rounds."""


def configure(collector: Collector, github: Any, docs: Any) -> None:
    collector.configure(
        github=github,
        docs_urls=[f"{docs.url()}/site{k}/" for k in range(4)],
        round_interval=0.5,
        stop_timeout=5,
        spiders={
            # Pages are fetched again after 15 s: later rounds still work (and write) for
            # seconds, so kills keep landing mid-round.
            "docs": {"weight": 4, "refresh_after": "15s",
                     "settings": {"CONCURRENT_REQUESTS_PER_DOMAIN": 2, **SEGMENTS}},
            "search": {"queries": SEARCH_QUERIES, "per_page": 50, "settings": SEGMENTS},
            "trending": {"languages": ["", "python"], "periods": ["daily", "weekly"],
                         "settings": SEGMENTS},
        },
    )
    # A generous first guess for the GitHub budget: the fake's headers say the same.
    config = yaml.safe_load(collector.config_path.read_text())
    config["github"]["limits"] = {"search": {"limit": 100000, "window": 60},
                                  "core": {"limit": 100000, "window": 3600}}
    collector.config_path.write_text(yaml.safe_dump(config, sort_keys=False))


def sqlite_stores(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "state").rglob("*.sqlite"))


def entry_count(path: Path) -> int | None:
    """Rows in a dedup store's ``entries``; None when it can't be read right now."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=5)
    except sqlite3.Error:
        return None
    try:
        return conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def integrity(path: Path) -> str:
    conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=30)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def status_running_pids(collector: Collector) -> dict[int, int]:
    """Running workers' pid → their failures in a row, from state/status.json."""
    try:
        workers = json.loads((collector.data_dir / "state" / "status.json").read_text())["workers"]
    except (OSError, ValueError, KeyError):
        return {}
    return {w["pid"]: w.get("failures", 0) for w in workers
            if w.get("state") == "running" and w.get("pid")}


def children(pid: int) -> set[int]:
    try:
        return {child.pid for child in psutil.Process(pid).children()}
    except psutil.Error:
        return set()


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True



def item_lines(data_dir: Path) -> dict[tuple[str, str], list[str]]:
    """content_hash of every line of every closed segment and every open one after a clean
    round, per (spider, shard); all must parse, none may end in a torn line."""
    lines: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted((data_dir / "items").rglob("*.jsonl*")):
        data = path.read_bytes()
        assert not data or data.endswith(b"\n"), f"{path.name} ends in a torn line"
        for number, raw in enumerate(data.splitlines(), 1):
            try:
                item = json.loads(raw)
            except ValueError as exc:
                raise AssertionError(f"{path.name}:{number} does not parse: {exc}") from None
            if "rows" in item:
                continue  # a trending page snapshot: an observation per round, by design
            lines[(item["spider"], item["shard"])].append(item["content_hash"])
    return lines


class StoreWatch:
    """Every store seen stays; its entry count never goes down; nothing is moved aside."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.rows: dict[Path, int] = {}
        self.samples = 0

    def sample(self) -> None:
        self.samples += 1
        present = set(sqlite_stores(self.data_dir))
        missing = set(self.rows) - present
        assert not missing, f"stores deleted: {sorted(map(str, missing))}"
        assert not list((self.data_dir / "state").rglob("*.unreadable-*")), "a store moved aside"
        for path in present:
            if path.name == "budget.sqlite":
                self.rows.setdefault(path, 0)  # its rows are windows, not a growing set
                continue
            count = entry_count(path)
            if count is None:
                self.rows.setdefault(path, 0)
                continue
            before = self.rows.get(path, 0)
            assert count >= before, f"{path} went from {before} to {count} rows: reset"
            self.rows[path] = count


def start_runner(collector: Collector) -> subprocess.Popen[str]:
    """``python -m runner --workers 6``, the same command every time (as the watchdog would)."""
    return subprocess.Popen([*RUNNER, "--workers", WORKERS], cwd=collector.home,
                            env=collector.env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.timeout(360)
def test_kill_9_workers_and_runner_loses_and_corrupts_nothing(
        tmp_path: Path, fake_docs_factory: Any, fake_github_factory: Any) -> None:
    # Rounds short enough that killed slots finish one between kills (five failures in a row
    # and the runner rightly gives up on a slot), long enough to be killed mid-round.
    docs = fake_docs_factory(sites=4, pages=120, latency_ms=30, jitter=0.34)
    github = fake_github_factory(search_limit=100000, core_limit=100000)
    rng = random.Random(SEED)

    # The fault-free reference, in its own home.
    reference = Collector(tmp_path / "reference")
    configure(reference, github, docs)
    done = reference.runner("--workers", WORKERS, "--once", timeout=120)
    assert done.returncode == 0, done.stderr
    # Its segments may still be open (whole lines after a clean round): read them all.
    reference_lines = item_lines(reference.data_dir)
    expected = {spider: {h for (s, _), found in reference_lines.items() if s == spider
                         for h in found}
                for spider in ("docs", "search", "trending")}
    assert all(expected.values()), {k: len(v) for k, v in expected.items()}

    collector = Collector(tmp_path / "chaos")
    configure(collector, github, docs)
    watch = StoreWatch(collector.data_dir)
    worker_kills = 0
    died_with_runner = 0
    runner_kills = 0
    runner = start_runner(collector)
    try:
        wait_for(lambda: status_running_pids(collector), 30, "running workers")
        started = time.time()
        runner_kill_at = sorted(rng.uniform(0.2, 0.8) * 50 for _ in range(RUNNER_KILLS))
        next_kill = time.time() + rng.uniform(0.2, 1.5)
        next_sample = time.time()
        while worker_kills < MIN_WORKER_KILLS + 2 or runner_kills < RUNNER_KILLS:
            assert time.time() - started < CHAOS_MAX_S, (
                f"only {worker_kills} worker kills, {runner_kills} runner kills in "
                f"{CHAOS_MAX_S}s")
            assert runner.poll() is None, f"the runner exited: {runner.stderr.read()}"
            now = time.time()
            if now >= next_sample:
                watch.sample()
                next_sample = now + 0.7
            if runner_kill_at and now - started >= runner_kill_at[0]:
                workers = children(runner.pid)
                if not workers:
                    time.sleep(0.05)
                    continue
                runner_kill_at.pop(0)
                runner.send_signal(signal.SIGKILL)
                runner.wait(timeout=10)
                runner_kills += 1
                # PR_SET_PDEATHSIG: the orphans end within seconds, before any restart.
                wait_for(lambda workers=workers: all(gone(pid) for pid in workers), 5,
                         f"workers {sorted(workers)} to die with their runner")
                died_with_runner += len(workers)
                runner = start_runner(collector)  # as the watchdog would
                wait_for(lambda pid=runner.pid: children(pid), 30,
                         "the restarted runner's workers")
                continue
            if now >= next_kill:
                # A live child of this runner (rounds are often shorter than status.json's 2 s
                # refresh, so its pids alone would mostly be stale), but not one that status
                # says is about to fail a 5th time in a row (the runner would give up on it).
                failures = status_running_pids(collector)
                candidates = sorted(pid for pid in children(runner.pid)
                                    if failures.get(pid, 0) < 4)
                if candidates:
                    victim = rng.choice(candidates)
                    try:
                        os.kill(victim, signal.SIGKILL)
                        worker_kills += 1
                    except ProcessLookupError:
                        pass
                next_kill = now + rng.uniform(0.2, 1.6)
            time.sleep(0.02)
        watch.sample()
        chaos_s = time.time() - started
    finally:
        if runner.poll() is None:
            runner.send_signal(signal.SIGTERM)
            try:
                runner.wait(timeout=20)
            except subprocess.TimeoutExpired:
                runner.kill()
                runner.wait()
    assert runner.returncode == 0

    # The clean run: every shard once more, to completion.
    clean = collector.runner("--workers", WORKERS, "--once", timeout=120)
    assert clean.returncode == 0, clean.stderr
    watch.sample()

    # Every store readable and intact; none deleted, reset or moved aside.
    stores = sqlite_stores(collector.data_dir)
    # One deltafetch and one contenthash store per spider, shared by its shards.
    state = collector.data_dir / "state"
    assert {p.relative_to(state).as_posix() for p in stores
            if p.parent.name in ("deltafetch", "contenthash")} == {
        f"{kind}/{spider}.sqlite" for kind in ("deltafetch", "contenthash")
        for spider in ("docs", "search", "trending")}
    for path in stores:
        assert integrity(path) == "ok", path
    assert set(watch.rows) <= set(stores)
    assert not list(collector.data_dir.rglob("*.unreadable-*"))
    # Every line parses; every shard's kills were recovered (whole lines, checked above) and
    # at most one open segment per shard is left after the clean round.
    lines = item_lines(collector.data_dir)
    open_segments = Counter(re.sub(r"-\d{8}T.*", "", p.name)
                            for p in (collector.data_dir / "items").rglob("*.part"))
    assert all(n == 1 for n in open_segments.values()), open_segments
    assert len(list((collector.data_dir / "items").rglob("*.jsonl"))) > 0

    # Nothing lost: the union of items equals the fault-free run's, spider by spider.
    for spider, hashes in expected.items():
        got = {h for (s, _), found in lines.items() if s == spider for h in found}
        assert got == hashes, (spider, len(hashes - got), "lost", len(got - hashes), "extra")

    # Duplicates only where a kill made them unavoidable — counted per spider: the stores are
    # the spider's, so two shards never both write one content either.
    by_spider: dict[str, list[str]] = defaultdict(list)
    for (spider, _), found in lines.items():
        by_spider[spider] += found
    duplicates = sum(len(found) - len(set(found)) for found in by_spider.values())
    kills = worker_kills + died_with_runner
    per_shard = {f"{s} {sh}": len(f) - len(set(f)) for (s, sh), f in sorted(lines.items())}
    logs = "".join(path.read_text(errors="replace")
                   for path in (collector.data_dir / "logs").glob("*.log*"))
    print(f"\nkills: {worker_kills} workers + {runner_kills} runners (taking "
          f"{died_with_runner} workers along) in {chaos_s:.0f}s; "
          f"duplicate lines: {duplicates} {per_shard}; .part files recovered: "
          f"{logs.count('(a killed round)')}; store samples: {watch.samples}; "
          f"items: " + ", ".join(f"{s} {len(h)}" for s, h in expected.items()))
    assert worker_kills >= MIN_WORKER_KILLS and runner_kills >= RUNNER_KILLS
    assert duplicates <= kills
    restarts = Counter(line.split(" ended (")[1].split(")")[0]
                       for line in (collector.data_dir / "logs" / "runner.log").read_text()
                       .splitlines() if " ended (" in line)
    assert restarts["killed by SIGKILL"] >= 1


@pytest.mark.timeout(90)
@pytest.mark.parametrize("fake_github", [{"search_limit": 100000, "core_limit": 100000}],
                         indirect=True)
def test_search_round_cut_short_strands_no_pages(collector: Collector, fake_github: Any) -> None:
    """A search round that ends after page 1 (a kill, a stop, a timeout on page 2) must not
    strand pages 2…: the next round collects them.

    What the kill test meets at random, deterministically: a round is cut short after its
    first 50 items (CLOSESPIDER_ITEMCOUNT), then a full round runs.
    """
    collector.configure(github=fake_github, spiders={
        "search": {"queries": ["alpha"], "per_page": 50}})
    config = yaml.safe_load(collector.config_path.read_text())
    config["github"]["limits"] = {"search": {"limit": 100000, "window": 60},
                                  "core": {"limit": 100000, "window": 3600}}
    collector.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    cut = collector.crawl("search", None, "-s", "CLOSESPIDER_ITEMCOUNT=50")
    assert cut.returncode == 0, cut.stderr
    assert 0 < len(collector.items("search")) < 250
    full = collector.crawl("search")
    assert full.returncode == 0, full.stderr
    hashes = {item["content_hash"] for item in collector.items("search")}
    stats = collector.stats("search")
    assert len(hashes) == 250, (
        f"{250 - len(hashes)} of 250 results stranded; second round: "
        f"search/not_modified={stats.get('search/not_modified')}, "
        f"item_scraped_count={stats.get('item_scraped_count')}")
