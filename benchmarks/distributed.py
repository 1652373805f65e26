"""The distributed mode (issue 7): pages/s and GitHub budget use, one machine against Redis.

    python -m benchmarks.distributed [--scale full|tiny] [--parts docs,budget]

Everything on loopback, with one ``redis-server`` the benchmark starts (random port, no
persistence, flushed between contenders). A "machine" is one ``python -m runner`` with its own
data dir; here both "machines" share this box's CPUs, so the figures show what the shared queue,
dedup and budget cost and give, not what a second box's CPUs add.

* **docs** — the same site (fake docs host, S sites × P pages, L ms per response) crawled
  ``--once`` by: ``one machine`` (``--workers W``, shards by start URL, SQLite stores),
  ``redis ×1`` (one runner, ``--workers W``, shared queue) and ``redis ×2`` (two runners of
  ``--workers W`` on one Redis). pages/s = pages the site served ÷ the span from the first to
  the last page served (start-up excluded); wall = from start until every runner exited. Every
  contender must collect the same content (checked). Pages are slow (``latency_ms``) and each
  worker asks at most 2 at a time, so the site's pace bounds the crawl, as on the
  internet, rather than this box's CPUs.
* **budget** — ``--spiders search`` with "huge" queries against a fake GitHub with short
  windows, for a fixed number of windows: ``one machine``, ``redis ×1``, ``redis ×2`` and
  ``2 × one machine`` (two runners, no Redis: two separate SQLite budgets on one identity).
  budget used = answers 200/304 ÷ (windows × limit); violations = 403/429 answers.

Results: ``benchmarks/results/distributed.json`` (``distributed-tiny.json`` for ``--scale
tiny``).
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import (
    REPO_ROOT,
    collector_env,
    default_results,
    describe_machine,
    format_table,
    kill_tree,
    machine_info,
    publish,
    ratio,
    scale_and_parts,
)
from tests.support.fakes.launcher import FakeServer, start_fake_docs, start_fake_github

PARTS = ("docs", "budget")


@dataclass(frozen=True, slots=True)
class Scale:
    sites: int
    pages: int
    latency_ms: float
    docs_workers: int  # per runner
    search_workers: int  # per runner
    limit: int  # search requests per window
    window: float  # seconds
    windows: int


SCALES = {
    "full": Scale(sites=16, pages=40, latency_ms=200, docs_workers=4, search_workers=4,
                  limit=20, window=5.0, windows=6),
    "tiny": Scale(sites=2, pages=20, latency_ms=50, docs_workers=2, search_workers=2,
                  limit=10, window=3.0, windows=2),
}


# --- redis ----------------------------------------------------------------------------------------


class Redis:
    def __init__(self, directory: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit("benchmarks.distributed: redis-server not found (apt-get install "
                             "redis-server)")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(directory)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        self.client = redis.Redis.from_url(self.url)
        deadline = time.time() + 10
        while True:
            try:
                self.client.ping()
                break
            except redis.exceptions.ConnectionError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)

    def version(self) -> str:
        return str(self.client.info("server").get("redis_version"))

    def stop(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(10)


# --- contenders -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Contender:
    name: str
    runners: int
    redis: bool


DOCS_CONTENDERS = (Contender("one machine", 1, False), Contender("redis ×1", 1, True),
                   Contender("redis ×2", 2, True))
BUDGET_CONTENDERS = (*DOCS_CONTENDERS, Contender("2 × one machine (no Redis)", 2, False))


def write_config(home: Path, spiders: dict[str, Any], **top: Any) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    config = {"data_dir": str(home / "data"), "round_interval": 1, "stop_timeout": 10,
              "spiders": {"trending": {"weight": 0}, "search": {"weight": 0},
                          "docs": {"weight": 0}, **spiders}, **top}
    path = home / "collector.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def start_runners(homes: list[Path], spider: str, workers: int, redis_url: str | None,
                  once: bool) -> list[subprocess.Popen[bytes]]:
    procs = []
    for home in homes:
        argv = [sys.executable, "-m", "runner", "--workers", str(workers), "--spiders", spider,
                "--force"]
        argv += ["--once"] if once else []
        argv += ["--redis-url", redis_url] if redis_url else []
        with (home / "runner.out").open("wb") as log:
            procs.append(subprocess.Popen(argv, cwd=home, env=collector_env(
                home / "collector.yaml"), stdout=log, stderr=subprocess.STDOUT))
    return procs


def stop_all(procs: list[subprocess.Popen[bytes]], timeout: float = 40) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid)
            proc.wait()


def items(home: Path, spider: str) -> list[dict[str, Any]]:
    rows = []
    for path in sorted((home / "data" / "items" / spider).glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return rows


def docs_run(contender: Contender, scale: Scale, root: Path, redis: Redis) -> dict[str, Any]:
    redis.client.flushall()
    fake = start_fake_docs(root / "fake", sites=scale.sites, pages=scale.pages,
                           latency_ms=scale.latency_ms)
    try:
        homes = [root / f"machine-{i}" for i in range(contender.runners)]
        for home in homes:
            # A remote site's pace, not this box's CPUs, must bound the crawl (as on the
            # internet, where Redis's round trips are small beside a page's): slow pages, 2 at a
            # time per worker, no autothrottle. (CONCURRENT_REQUESTS, not ..._PER_DOMAIN: Scrapy
            # 2.19 lets a burst of queued requests past the per-slot limit.)
            write_config(home, {"docs": {"weight": 1, "max_pages_per_site": 10_000,
                                         "start_urls": [f"{fake.url()}/site{k}/"
                                                        for k in range(scale.sites)],
                                         "settings": {"AUTOTHROTTLE_ENABLED": False,
                                                      "DOWNLOAD_DELAY": 0,
                                                      "CONCURRENT_REQUESTS": 2}}})
        started = time.time()
        procs = start_runners(homes, "docs", scale.docs_workers,
                              redis.url if contender.redis else None, once=True)
        for proc in procs:
            proc.wait(timeout=600)
        wall = time.time() - started
        codes = [proc.returncode for proc in procs]
        served = [r for r in fake.stats()["requests"] if r["path"] != "/robots.txt"]
    finally:
        fake.stop()
    times = sorted(r["t"] for r in served)
    span = times[-1] - times[0] if len(times) > 1 else None
    counts = Counter(r["path"] for r in served)
    collected = [i for home in homes for i in items(home, "docs")]
    hashes = Counter(i["content_hash"] for i in collected)
    return {
        "contender": contender.name, "runners": contender.runners, "redis": contender.redis,
        "workers": contender.runners * scale.docs_workers, "exit_codes": codes,
        "pages": len(served), "pages_fetched_twice": sum(1 for n in counts.values() if n > 1),
        "span_s": round(span, 2) if span else None,
        "pages_per_s": len(served) / span if span else None, "wall_s": round(wall, 2),
        "startup_s": round(times[0] - started, 2) if times else None,
        "items": len(collected), "unique_content": len(hashes),
        "duplicates": sum(n - 1 for n in hashes.values()),
        "content_hashes": sorted(hashes),
    }


def budget_run(contender: Contender, scale: Scale, root: Path, redis: Redis) -> dict[str, Any]:
    redis.client.flushall()
    fake = start_fake_github(root / "fake", search_limit=scale.limit,
                             search_window=scale.window)
    try:
        homes = [root / f"machine-{i}" for i in range(contender.runners)]
        for home in homes:
            # "huge" queries page on and on: no worker runs out of work within the run.
            queries = [f"huge bench{i}" for i in range(scale.search_workers * 2)]
            write_config(home, {"search": {"weight": 1, "queries": queries, "per_page": 10}},
                         github={"web_url": fake.url("web"), "api_url": fake.url("api"),
                                 "web_min_interval": 0,
                                 "limits": {"search": {"limit": scale.limit,
                                                       "window": scale.window}}})
        started = time.time()
        procs = start_runners(homes, "search", scale.search_workers,
                              redis.url if contender.redis else None, once=False)
        try:
            first = wait_first(fake, procs, started)
            duration = scale.windows * scale.window
            time.sleep(max(0.0, first + duration - time.time()))
        finally:
            stop_all(procs)
        requests = sorted((r for r in fake.stats()["requests"]
                           if r["path"].startswith("/search/")), key=lambda r: r["t"])
    finally:
        fake.stop()
    span = [r for r in requests if first <= r["t"] < first + duration]
    answered = sum(1 for r in span if r["status"] in (200, 304))
    budget = scale.windows * scale.limit
    return {
        "contender": contender.name, "runners": contender.runners, "redis": contender.redis,
        "workers": contender.runners * scale.search_workers, "requests": len(span),
        "answered": answered, "violations": sum(1 for r in span if r["status"] in (403, 429)),
        "budget": budget, "budget_used": answered / budget,
        "startup_s": round(first - started, 2),
    }


def wait_first(fake: FakeServer, procs: list[subprocess.Popen[bytes]], started: float) -> float:
    while True:
        requests = [r["t"] for r in fake.stats()["requests"] if r["path"].startswith("/search/")]
        if requests:
            return min(requests)
        if any(proc.poll() is not None for proc in procs):
            raise RuntimeError("a runner exited before its first search request")
        if time.time() - started > 120:
            raise RuntimeError("no search request within 120 s")
        time.sleep(0.2)


# --- report ---------------------------------------------------------------------------------------


def render(results: dict[str, Any]) -> str:
    scale = results["scale"]
    out = [f"distributed mode — {results['machine_summary']}, Redis {results['redis_version']}"]
    docs = results.get("docs")
    if docs:
        base = docs[0]
        rows = [[r["contender"], r["workers"], r["pages"], r["pages_fetched_twice"],
                 f"{r['span_s']:.1f}" if r["span_s"] else "—",
                 f"{r['pages_per_s']:.1f}" if r["pages_per_s"] else "—",
                 f"{x:.2f}×" if (x := ratio(r["pages_per_s"], base["pages_per_s"])) else "—",
                 f"{r['wall_s']:.1f}", r["unique_content"], r["duplicates"],
                 "yes" if r["same_content"] else "NO"] for r in docs]
        out += ["", f"docs: {scale['sites']} sites × {scale['pages']} pages, "
                f"{scale['latency_ms']:g} ms per page, --once, {scale['docs_workers']} workers "
                "per runner",
                format_table(["contender", "workers", "pages", "twice", "span s", "pages/s",
                              "vs one machine", "wall s", "content", "dupes", "same content"],
                             rows),
                "twice = pages served twice (the flaky page: a 500, then the retry); content = "
                "distinct content hashes written; same content = as the one-machine crawl"]
    budget = results.get("budget")
    if budget:
        base = budget[0]
        rows = [[r["contender"], r["workers"], r["requests"], r["answered"],
                 f"{r['budget_used']:.1%}",
                 f"{x:.2f}×" if (x := ratio(r["budget_used"], base["budget_used"])) else "—",
                 r["violations"]] for r in budget]
        out += ["", f"budget: search, {scale['windows']} windows × {scale['limit']} requests per "
                f"{scale['window']:g} s ({budget[0]['budget']} answers), "
                f"{scale['search_workers']} workers per runner",
                format_table(["contender", "workers", "sent", "answered", "budget used",
                              "vs one machine", "violations"], rows),
                "budget used = answers 200/304 ÷ (windows × limit) over the run's span; the "
                "fake's resets are whole seconds, rounded up (a window lasts up to 1 s longer), "
                "as GitHub's"]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    args, parts = scale_and_parts("python -m benchmarks.distributed", __doc__ or "", SCALES, PARTS,
                                  argv)
    scale = SCALES[args.scale]
    machine = machine_info()
    results: dict[str, Any] = {"scale": {"name": args.scale, **asdict(scale)}, "machine": machine,
                               "machine_summary": describe_machine(machine),
                               "command": [sys.executable, "-m", "benchmarks.distributed",
                                           *(argv if argv is not None else sys.argv[1:])],
                               "repo": str(REPO_ROOT)}
    with tempfile.TemporaryDirectory(prefix="bench-distributed-") as tmp:
        redis = Redis(Path(tmp) / "redis")
        results["redis_version"] = redis.version()
        try:
            plan: list[tuple[str, tuple[Contender, ...], Callable[..., dict[str, Any]]]] = [
                ("docs", DOCS_CONTENDERS, docs_run), ("budget", BUDGET_CONTENDERS, budget_run)]
            for part, contenders, run in plan:
                if part not in parts:
                    continue
                rows = []
                for n, contender in enumerate(contenders):
                    began = time.time()
                    print(f"distributed: {part}: {contender.name} ...", flush=True)
                    rows.append(run(contender, scale, Path(tmp) / f"{part}-{n}", redis))
                    print(f"distributed: {part}: {contender.name} done in "
                          f"{time.time() - began:.0f} s", flush=True)
                results[part] = rows
        finally:
            redis.stop()
    if "docs" in results:
        reference = set(results["docs"][0]["content_hashes"])
        for row in results["docs"]:
            row["same_content"] = set(row.pop("content_hashes")) == reference
    return publish(args.out or default_results("distributed", args.scale), results, render)


if __name__ == "__main__":
    raise SystemExit(main())
