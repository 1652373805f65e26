"""Scale of the distributed mode: 1, 2 and 3 runners on one Redis, and what Redis holds.

    python -m benchmarks.cluster [--scale full|tiny] [--parts scale,memory]

* **scale** — H fake docs hosts (each its own loopback address, so its own politeness slot;
  S sites × P pages each, L ms per response: latency-bound, as remote sites are) crawled
  ``--once`` by 1, 2 and 3 runners (``--workers W`` each, separate data dirs) on one
  ``redis-server``. Per contender: pages/s (pages served ÷ the span from the first to the last
  page served), pages per CPU-second (every runner's and worker's user+system time, from
  ``RUSAGE_CHILDREN`` once they exited: the fakes and Redis are not counted), Redis commands
  per page (``total_commands_processed``: a script is one) and pages fetched twice, and the
  content written: the same content hashes as the 1-runner crawl, 0 duplicates. The speed-up
  is against the 1-runner row of the same run. All runners share this box's CPUs: the figure
  shows what the shared queue and the cluster-wide politeness cost and give, on a machine
  whose load is printed with the results.
* **memory** — Redis's ``used_memory`` for N entries of each structure the cluster keeps,
  written as the components write them (the project's own serializer and key names): queued
  docs requests (per 1,000), request fingerprints (the round's dupefilter), deltafetch records
  with their links, and content hashes (per million). Measured on an empty Redis, N at a time.

Results: ``benchmarks/results/cluster.json`` (``cluster-tiny.json`` for ``--scale tiny``).
"""

from __future__ import annotations

import hashlib
import json
import resource
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import (
    REPO_ROOT,
    describe_load,
    describe_machine,
    format_table,
    machine_info,
    publish,
    ratio,
    scale_and_parts,
)
from benchmarks.distributed import Redis, items, start_runners, write_config
from tests.support.fakes.launcher import FakeServer, start_fake_docs

PARTS = ("scale", "memory")
RUNNERS = (1, 2, 3)


@dataclass(frozen=True, slots=True)
class Scale:
    hosts: int
    sites: int  # per host
    pages: int  # per site
    latency_ms: float
    workers: int  # docs workers per runner
    concurrency: int  # requests at a time per worker
    per_host: int  # CONCURRENT_REQUESTS_PER_DOMAIN: the cluster's, per host
    memory_n: int  # entries per structure in the memory part


SCALES = {
    "full": Scale(hosts=4, sites=3, pages=60, latency_ms=1500, workers=2, concurrency=4,
                  per_host=8, memory_n=200_000),
    "tiny": Scale(hosts=2, sites=1, pages=20, latency_ms=200, workers=1, concurrency=2,
                  per_host=4, memory_n=10_000),
}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def scale_run(runners: int, scale: Scale, root: Path, redis: Redis) -> dict[str, Any]:
    redis.client.flushall()
    fakes: list[FakeServer] = []
    try:
        for h in range(scale.hosts):
            fakes.append(start_fake_docs(root / f"fake-{h}", host=f"127.0.0.{20 + h}",
                                         sites=scale.sites, pages=scale.pages,
                                         latency_ms=scale.latency_ms))
        start_urls = [f"{fake.url()}/site{k}/" for fake in fakes for k in range(scale.sites)]
        homes = [root / f"box-{i}" for i in range(runners)]
        for home in homes:
            write_config(home, {"docs": {
                "weight": 1, "max_pages_per_site": 10_000, "start_urls": start_urls,
                "settings": {"AUTOTHROTTLE_ENABLED": False, "DOWNLOAD_DELAY": 0,
                             "CONCURRENT_REQUESTS": scale.concurrency,
                             "CONCURRENT_REQUESTS_PER_DOMAIN": scale.per_host}}})
        commands_before = int(redis.client.info("stats")["total_commands_processed"])
        cpu_before, started = children_cpu(), time.time()
        procs = start_runners(homes, "docs", scale.workers, redis.url, once=True)
        for proc in procs:
            proc.wait(timeout=900)
        wall, cpu = time.time() - started, children_cpu() - cpu_before
        commands = int(redis.client.info("stats")["total_commands_processed"]) - commands_before
        served = [{**r, "host": h} for h, fake in enumerate(fakes)
                  for r in fake.stats()["requests"] if r["path"] != "/robots.txt"]
        peak = max(fake.stats()["max_concurrency"] for fake in fakes)
    finally:
        for fake in fakes:
            fake.stop()
    times = sorted(r["t"] for r in served)
    span = times[-1] - times[0] if len(times) > 1 else None
    counts = Counter((r["host"], r["path"]) for r in served)
    collected = [i for home in homes for i in items(home, "docs")]
    hashes = Counter(i["content_hash"] for i in collected)
    return {
        "runners": runners, "workers": runners * scale.workers,
        "exit_codes": [proc.returncode for proc in procs], "pages": len(served),
        "pages_fetched_twice": sum(1 for n in counts.values() if n > 1),
        "span_s": round(span, 2) if span else None,
        "pages_per_s": len(served) / span if span else None, "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1), "pages_per_cpu_s": len(served) / cpu if cpu else None,
        "redis_commands": commands, "redis_commands_per_page":
            commands / len(served) if served else None,
        "max_concurrency_per_host": peak, "items": len(collected),
        "unique_content": len(hashes), "duplicates": sum(n - 1 for n in hashes.values()),
        "content_hashes": sorted(hashes),
    }


# --- memory ---------------------------------------------------------------------------------------


def _used(redis: Redis) -> int:
    return int(redis.client.info("memory")["used_memory"])


def _fill(redis: Redis, n: int, write: Any) -> float:
    """Bytes of Redis memory per entry for ``n`` entries written by ``write(pipe, i)``."""
    redis.client.flushall()
    before = _used(redis)
    pipe = redis.client.pipeline(transaction=False)
    for i in range(n):
        write(pipe, i)
        if i % 5000 == 4999:
            pipe.execute()
    pipe.execute()
    per_entry = (_used(redis) - before) / n
    redis.client.flushall()
    return per_entry


def docs_request_entry(i: int) -> bytes:
    """A docs request as the shared queue holds it (the project's serializer)."""
    from scrapy import Request, Spider

    from scraper.cluster import serializer

    class Docs(Spider):
        name = "docs"

        def parse(self, response: Any) -> None: ...

        def request_failed(self, failure: Any) -> None: ...

    spider = Docs()
    request = Request(f"https://docs.example.org/en/stable/reference/page{i}.html",
                      callback=spider.parse, errback=spider.request_failed,
                      meta={"site": "https://docs.example.org/en/stable/"})
    return serializer.dumps(request.to_dict(spider=spider))


def memory_part(scale: Scale, redis: Redis) -> dict[str, Any]:
    from scraper.dedup.redishashes import unix_seconds
    from scraper.redis.keys import Keys

    keys, n = Keys(), scale.memory_n
    template = docs_request_entry(0)
    links = json.dumps([f"https://docs.example.org/en/stable/reference/page{k}.html"
                        for k in range(20)])

    def fp(i: int) -> str:
        return hashlib.sha1(str(i).encode()).hexdigest()

    def queued(pipe: Any, i: int) -> None:
        pipe.zadd(keys.requests("docs"), {template.replace(b"page0.", f"page{i}.".encode()): 0})

    def dupefilter(pipe: Any, i: int) -> None:
        pipe.sadd(keys.dupefilter("docs"), fp(i))

    def deltafetch(pipe: Any, i: int) -> None:
        key = bytes.fromhex(fp(i))
        pipe.set(keys.deltafetch("docs", key), "2026-12-01T10:00:00.000000Z", ex=7 * 86400)

    def deltafetch_links(pipe: Any, i: int) -> None:
        pipe.set(keys.links("docs", bytes.fromhex(fp(i))), links, ex=8 * 86400)

    def contenthash(pipe: Any, i: int) -> None:  # as the content-hash pipeline confirms one
        pipe.hset(*keys.contenthash("docs", hashlib.sha256(str(i).encode()).hexdigest()),
                  unix_seconds("2026-12-01T10:00:00Z"))

    def contenthash_plain(pipe: Any, i: int) -> None:  # one hash, hex digest → text stamp
        pipe.hset("plain", hashlib.sha256(str(i).encode()).hexdigest(), "2026-12-01T10:00:00Z")

    return {
        "n": n, "queued_request_bytes": len(template),
        "per_1000_queued_requests": _fill(redis, n, queued) * 1000,
        "per_million": {name: _fill(redis, n, write) * 1_000_000 for name, write in (
            ("dupefilter fingerprints", dupefilter), ("deltafetch records", deltafetch),
            ("deltafetch links (20 links a page)", deltafetch_links),
            ("content hashes (as kept: 65,536 small hashes)", contenthash),
            ("content hashes in one plain hash (for comparison)", contenthash_plain))},
    }


# --- report ---------------------------------------------------------------------------------------


def _mb(value: float) -> str:
    return f"{value / 1e6:.0f} MB"


def render(results: dict[str, Any]) -> str:
    scale = results["scale"]
    out = [f"cluster — {results['machine_summary']}, Redis {results['redis_version']}; "
           f"{describe_load(results)}"]
    rows = results.get("scale_rows")
    if rows:
        base = rows[0]
        table = [[r["runners"], r["workers"], r["pages"], r["pages_fetched_twice"],
                  f"{r['span_s']:.1f}", f"{r['pages_per_s']:.1f}",
                  f"{ratio(r['pages_per_s'], base['pages_per_s']):.2f}×",
                  f"{r['pages_per_cpu_s']:.1f}", f"{r['redis_commands_per_page']:.1f}",
                  r["max_concurrency_per_host"], r["unique_content"], r["duplicates"],
                  "yes" if r["same_content"] else "NO"] for r in rows]
        out += ["", f"scale: {scale['hosts']} hosts × {scale['sites']} sites × "
                f"{scale['pages']} pages, {scale['latency_ms']:g} ms per page, --once, "
                f"{scale['workers']} workers per runner × {scale['concurrency']} requests, "
                f"{scale['per_host']} per host for the cluster",
                format_table(["runners", "workers", "pages", "twice", "span s", "pages/s",
                              "vs 1 runner", "pages/CPU-s", "Redis cmds/page", "peak/host",
                              "content", "dupes", "same content"], table),
                "twice = pages served twice (each site's flaky page: a 500, then the retry); "
                "peak/host = most requests one host had at once"]
    memory = results.get("memory")
    if memory:
        out += ["", f"Redis memory ({memory['n']:,} entries each, used_memory delta; a queued "
                f"docs request is {memory['queued_request_bytes']} bytes of JSON)",
                f"  per 1,000 queued requests: {memory['per_1000_queued_requests'] / 1e3:.0f} KB"]
        out += [f"  per million {name}: {_mb(v)}" for name, v in memory["per_million"].items()]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    args, parts = scale_and_parts("python -m benchmarks.cluster", __doc__ or "", SCALES, PARTS,
                                  argv)
    scale = SCALES[args.scale]
    machine = machine_info()
    results: dict[str, Any] = {
        "scale": {"name": args.scale, **asdict(scale)}, "machine": machine,
        "machine_summary": describe_machine(machine),
        "command": [sys.executable, "-m", "benchmarks.cluster",
                    *(argv if argv is not None else sys.argv[1:])], "repo": str(REPO_ROOT)}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        redis = Redis(Path(tmp) / "redis")
        results["redis_version"] = redis.version()
        try:
            if "scale" in parts:
                rows = []
                for runners in RUNNERS:
                    began = time.time()
                    print(f"cluster: {runners} runner(s) ...", flush=True)
                    rows.append(scale_run(runners, scale, Path(tmp) / f"scale-{runners}", redis))
                    print(f"cluster: {runners} runner(s) done in {time.time() - began:.0f} s",
                          flush=True)
                reference = set(rows[0]["content_hashes"])
                for row in rows:
                    row["same_content"] = set(row.pop("content_hashes")) == reference
                results["scale_rows"] = rows
            if "memory" in parts:
                results["memory"] = memory_part(scale, redis)
        finally:
            redis.stop()
    results["load_average_end"] = list(__import__("os").getloadavg())
    return publish(args.out or default_out(args.scale), results, render)


def default_out(scale: str) -> Path:
    from benchmarks.common import default_results

    return default_results("cluster", scale)


if __name__ == "__main__":
    raise SystemExit(main())
