"""Throughput, CPU per page and memory of every contender on the same docs sites, in one run.

    python -m benchmarks.throughput [--scale tiny|full] [--workloads cpu,latency]
                                    [--workers 2,4,8,20] [--repeat K] [--only NAMES]

Two workloads, each a set of fake documentation sites (``full``: 20 sites × 300 pages of ~6 KB;
``tiny``: 2 × 20, for the smoke test):

* ``cpu``: static, pre-gzipped files served by nginx (``benchmarks/nginx.py``): the crawler's
  own CPU limits pages/s. Skipped, with the reason printed, when nginx is not installed.
* ``latency``: the project's fake docs host (``tests/support/fakes/docs.py``), 50 ms ± 50% per
  response: waiting on the network limits pages/s.

Contenders, each on the whole site set, one after the other against the same server:

* ``runner-N``: ``python -m runner --workers N --once --spiders docs`` (the collector);
* ``runner-N all at once``: the same with ``autoscale.min_concurrency: N`` (every worker
  crawls from the start: the layout without the autoscaled pool), for the largest N;
* ``scrapy crawl docs``: the collector's spider in one process, no runner;
* ``plain Scrapy``: a stock Scrapy process with the same extraction (``plain_scrapy.py``);
* ``predecessor-N``: the predecessor's design (``predecessor.py``);
* ``crawlee``: Crawlee for Python's ParselCrawler, when it is installed.

Every Scrapy contender runs with concurrency 16 (per host too: all sites share one host), no
autothrottle, no download delay. Figures: pages/s (pages parsed / wall time), pages per CPU
second of the contender's whole process tree (``wait4`` rusage, which includes every reaped
descendant), peak and steady (median of the middle half) tree PSS, time to first item.
Results: ``benchmarks/results/throughput.json`` and ``throughput.png`` (``-tiny`` for tiny).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import (
    CONTENDER_NICE,
    PYTHON,
    REPO_ROOT,
    SERVER_NICE,
    can_raise_priority,
    collector_env,
    collector_pages,
    default_results,
    describe_load,
    describe_machine,
    first_file_seen,
    fmt,
    format_table,
    machine_info,
    plain_env,
    raise_priority,
    ratio,
    run_measured,
    runner_command,
    worker_states,
    write_collector_config,
    write_json,
)

LATENCY_MS = 50.0
PEAK_PSS_TARGET_MB = 600  # issue 17: 20 workers crawling, the whole tree
JITTER = 0.5
PAGE_KB = 6.0


@dataclass(frozen=True, slots=True)
class Scale:
    sites: int
    pages: int
    workers: tuple[int, ...]
    sample_interval: float
    timeout: float


SCALES = {
    "tiny": Scale(sites=2, pages=20, workers=(2,), sample_interval=0.25, timeout=120),
    "full": Scale(sites=20, pages=300, workers=(2, 4, 8, 20), sample_interval=1.0, timeout=900),
}


# --- contenders ----------------------------------------------------------------------------------


@dataclass
class Launch:
    """How to start one contender in ``home`` and read what it did afterwards."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    first_item: Callable[[], float | None] | None
    report: Callable[[], dict[str, Any]]  # {"pages": n, ...}; may hold "first_item_at"


@dataclass(frozen=True)
class Contender:
    name: str
    family: str  # runner, runner-all, scrapy-crawl, plain-scrapy, predecessor(-pid), crawlee
    workers: int
    prepare: Callable[[Path, list[str]], Launch]
    skip_reason: str | None = None


def _summary(path: Path) -> Callable[[], dict[str, Any]]:
    def read() -> dict[str, Any]:
        try:
            return dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return {"pages": 0, "error": f"no summary at {path}"}
    return read


def _collector_report(home: Path) -> Callable[[], dict[str, Any]]:
    def read() -> dict[str, Any]:
        data = home / "data"
        return {"pages": collector_pages(data), "processes": len(worker_states(data))}
    return read


COLLECTOR_SETTINGS: dict[str, Any] = {}
"""Extra Scrapy settings for the collector's contenders (``--set``), to try a settings change."""


def runner_contender(workers: int, all_at_once: bool = False) -> Contender:
    """The runner; ``all_at_once``: every worker crawls from the start (autoscale's minimum =
    the plan), the layout without the autoscaled pool."""
    def prepare(home: Path, urls: list[str]) -> Launch:
        autoscale = {"autoscale": {"min_concurrency": workers}} if all_at_once else {}
        config = write_collector_config(home, urls, settings=COLLECTOR_SETTINGS, **autoscale)
        items = home / "data" / "items" / "docs"
        return Launch(
            [*runner_command(), "--config", str(config),
             "--workers", str(workers), "--once", "--spiders", "docs"],
            home, collector_env(config), lambda: first_file_seen(items, "*.jsonl*"),
            _collector_report(home))
    if all_at_once:
        return Contender(f"runner-{workers} all at once", "runner-all", workers, prepare)
    return Contender(f"runner-{workers}", "runner", workers, prepare)


def scrapy_crawl_contender() -> Contender:
    def prepare(home: Path, urls: list[str]) -> Launch:
        config = write_collector_config(home, urls, settings=COLLECTOR_SETTINGS)
        items = home / "data" / "items" / "docs"
        return Launch([PYTHON, "-m", "scrapy", "crawl", "docs"], REPO_ROOT,
                      collector_env(config), lambda: first_file_seen(items, "*.jsonl*"),
                      _collector_report(home))
    return Contender("scrapy crawl docs", "scrapy-crawl", 1, prepare)


def plain_scrapy_contender() -> Contender:
    def prepare(home: Path, urls: list[str]) -> Launch:
        home.mkdir(parents=True, exist_ok=True)
        summary = home / "summary.json"
        return Launch([PYTHON, "-m", "benchmarks.plain_scrapy", "--feed",
                       str(home / "items.jsonl"), "--summary", str(summary), *urls],
                      home, plain_env(), None, _summary(summary))
    return Contender("plain Scrapy", "plain-scrapy", 1, prepare)


def predecessor_contender(workers: int, assign: str = "index") -> Contender:
    def prepare(home: Path, urls: list[str]) -> Launch:
        home.mkdir(parents=True, exist_ok=True)
        summary = home / "summary.json"
        return Launch([PYTHON, "-m", "benchmarks.predecessor", "--workers", str(workers),
                       "--assign", assign, "--out", str(home / "pages"), "--summary",
                       str(summary), *urls], home, plain_env(), None, _summary(summary))
    if assign == "pid":
        return Contender(f"predecessor-{workers} pid%N", "predecessor-pid", workers, prepare)
    return Contender(f"predecessor-{workers}", "predecessor", workers, prepare)


def crawlee_contender() -> Contender:
    def prepare(home: Path, urls: list[str]) -> Launch:
        home.mkdir(parents=True, exist_ok=True)
        summary = home / "summary.json"
        return Launch([PYTHON, "-m", "benchmarks.crawlee_parsel", "--storage",
                       str(home / "storage"), "--summary", str(summary), *urls],
                      home, plain_env(), None, _summary(summary))
    reason = None
    if importlib.util.find_spec("crawlee") is None:
        reason = "crawlee is not installed (pip install 'crawlee[parsel]')"
    return Contender("crawlee", "crawlee", 1, prepare, reason)


def contenders(workers: tuple[int, ...]) -> list[Contender]:
    return [
        scrapy_crawl_contender(),
        plain_scrapy_contender(),
        *(runner_contender(n) for n in workers),
        runner_contender(max(workers), all_at_once=True),
        *(predecessor_contender(n) for n in workers),
        predecessor_contender(max(workers), "pid"),
        crawlee_contender(),
    ]


# --- one run -------------------------------------------------------------------------------------


def measure(contender: Contender, home: Path, urls: list[str], scale: Scale,
            nice: int = 0) -> dict[str, Any]:
    launch = contender.prepare(home, urls)
    measured = run_measured(launch.argv, cwd=launch.cwd, env=launch.env, log=home / "output.log",
                            first_item=launch.first_item, sample_interval=scale.sample_interval,
                            timeout=scale.timeout, nice=nice)
    report = launch.report()
    first = measured.first_item_s
    if first is None and report.get("first_item_at"):
        first = max(0.0, float(report["first_item_at"]) - measured.started_at)
    pages = int(report.get("pages") or 0)
    row: dict[str, Any] = {
        "name": contender.name, "family": contender.family,
        "workers": contender.workers,
        "processes": int(report.get("processes") or contender.workers),
        "pages": pages,
        "pages_per_s": round(pages / measured.wall_s, 1) if measured.wall_s else None,
        "pages_per_cpu_s": round(pages / measured.cpu_s, 1) if measured.cpu_s else None,
        "cpu_ms_per_page": round(1000 * measured.cpu_s / pages, 3) if pages else None,
        **measured.as_dict(),
        "first_item_s": None if first is None else round(first, 3),
    }
    if row["steady_pss_mb"] and row["pages_per_s"]:
        row["mb_per_page_per_s"] = round(row["steady_pss_mb"] / row["pages_per_s"], 3)
    for key in ("sites_covered", "sites_crawled_twice_or_more", "failed", "reason"):
        if key in report:
            row[key] = report[key]
    if measured.returncode != 0:
        tail = (home / "output.log").read_text(errors="replace").strip().splitlines()[-3:]
        row["error"] = " | ".join(tail)
    return row


def median_row(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row from repeated runs: the median of every number (a count stays a whole number;
    the worst exit status and coverage win), the rest from the first run."""
    row = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        values = [r[key] for r in runs if isinstance(r.get(key), int | float)]
        if key == "returncode":
            row[key] = max(values, key=abs)
        elif key == "sites_covered":  # the worst run shows what pid modulo N can do
            row[key] = min(values)
        elif key == "sites_crawled_twice_or_more":
            row[key] = max(values)
        elif isinstance(value, int):
            row[key] = round(statistics.median(values))
        else:
            row[key] = round(statistics.median(values), 3)
    row["runs"] = len(runs)
    return row


# --- servers -------------------------------------------------------------------------------------


@dataclass
class Server:
    url: str
    boosted: bool  # runs ahead of the contenders (SERVER_NICE)
    before_each: Callable[[], None] = field(default=lambda: None)
    info: dict[str, Any] = field(default_factory=dict)


@contextlib.contextmanager
def cpu_server(work: Path, scale: Scale) -> Iterator[Server]:
    from benchmarks.nginx import Nginx

    with Nginx(work / "nginx", scale.sites, scale.pages, PAGE_KB) as nginx:
        yield Server(nginx.url, nginx.boosted,
                     info={"server": "nginx", "files": nginx.files, "nginx_worker_processes": 1,
                           "server_nice": SERVER_NICE if nginx.boosted else 0})


def _warm(url: str, paths: list[str]) -> None:
    """Fetch every page once (gzip), so the fake host has rendered and compressed it all."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def get(path: str) -> None:
        request = urllib.request.Request(url + path, headers={"Accept-Encoding": "gzip"})
        with contextlib.suppress(OSError), opener.open(request, timeout=30) as response:
            response.read()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(get, paths))


@contextlib.contextmanager
def latency_server(work: Path, scale: Scale) -> Iterator[Server]:
    from tests.support.fakes.launcher import start_fake_docs

    fake = start_fake_docs(work / "fake-docs", host="127.0.0.2", sites=scale.sites,
                           pages=scale.pages, page_kb=PAGE_KB)
    try:
        paths = [f"/site{k}/page{i}.html" for k in range(scale.sites) for i in range(scale.pages)]
        paths += [f"/site{k}/{rest}" for k in range(scale.sites) for rest in ("", "index.html")]
        _warm(fake.url(), paths)
        fake.control(latency_ms=LATENCY_MS, jitter=JITTER, reset_stats=True)
        boosted = can_raise_priority() and raise_priority(fake.process.pid)
        yield Server(fake.url(), boosted,
                     lambda: fake.control(reset_stats=True, reset_flaky=True),
                     {"server": "tests.support.fakes.docs (aiohttp)", "latency_ms": LATENCY_MS,
                      "jitter": JITTER, "server_nice": SERVER_NICE if boosted else 0})
    finally:
        fake.stop()


WORKLOADS: dict[str, Callable[[Path, Scale], contextlib.AbstractContextManager[Server]]] = {
    "cpu": cpu_server,
    "latency": latency_server,
}
WORKLOAD_TITLES = {
    "cpu": "CPU-bound: static pre-gzipped pages from nginx",
    "latency": f"latency-bound: fake docs host, {LATENCY_MS:.0f} ms ± {JITTER:.0%} per response",
}


def run_workload(name: str, work: Path, scale: Scale, entrants: list[Contender],
                 repeat: int, nice: int | None = None) -> dict[str, Any]:
    try:
        server_cm = WORKLOADS[name](work / name, scale)
        server = server_cm.__enter__()
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"[{name}] skipped: {exc}", flush=True)
        return {"skipped": str(exc)}
    try:
        if nice is None:
            nice = 0 if server.boosted else CONTENDER_NICE
        urls = [f"{server.url}/site{k}/" for k in range(scale.sites)]
        runs: dict[str, list[dict[str, Any]]] = {}
        skipped: dict[str, str] = {}
        for attempt in range(repeat):
            for contender in entrants:
                if contender.skip_reason:
                    if attempt == 0:
                        print(f"[{name}] {contender.name}: skipped: {contender.skip_reason}",
                              flush=True)
                    skipped[contender.name] = contender.skip_reason
                    continue
                server.before_each()
                home = work / name / f"{contender.name.replace(' ', '_')}-{attempt}"
                row = measure(contender, home, urls, scale, nice)
                runs.setdefault(contender.name, []).append(row)
                print(f"[{name}] {contender.name}: {row['pages']} pages in "
                      f"{row['wall_s']:.1f} s, {fmt(row['pages_per_s'])} pages/s, "
                      f"{fmt(row['pages_per_cpu_s'])} pages/CPU-s, peak "
                      f"{fmt(row['peak_pss_mb'])} MB"
                      + (f" — FAILED: {row['error']}" if row.get("error") else ""), flush=True)
        rows = [median_row(r) for r in runs.values()]
        add_ratios(rows)
        return {"title": WORKLOAD_TITLES[name], "server": server.info, "contender_nice": nice,
                "urls": len(urls),
                "rows": rows, "skipped_contenders": skipped,
                "all_runs": {k: v for k, v in runs.items() if len(v) > 1}}
    finally:
        server_cm.__exit__(None, None, None)


def add_ratios(rows: list[dict[str, Any]]) -> None:
    bases = {family: next((r for r in rows if r["family"] == family), None)
             for family in ("plain-scrapy", "scrapy-crawl")}
    for row in rows:
        for family, base in bases.items():
            key = "plain" if family == "plain-scrapy" else "crawl"
            for metric in ("pages_per_s", "pages_per_cpu_s"):
                value = ratio(row.get(metric), base.get(metric) if base else None)
                row[f"{metric}_vs_{key}"] = None if value is None else round(value, 3)


# --- output --------------------------------------------------------------------------------------


def render_workload(name: str, result: dict[str, Any]) -> str:
    if "skipped" in result:
        return f"{name}: skipped: {result['skipped']}"
    headers = ["contender", "procs", "pages", "pages/s", "×plain", "×crawl", "pages/CPU-s",
               "×plain", "×crawl", "CPU ms/page", "peak MB", "steady MB", "MB per page/s",
               "1st item s"]
    rows = []
    for r in result["rows"]:
        rows.append([
            r["name"], r["processes"], r["pages"], fmt(r["pages_per_s"]),
            fmt(r.get("pages_per_s_vs_plain"), 2), fmt(r.get("pages_per_s_vs_crawl"), 2),
            fmt(r["pages_per_cpu_s"]), fmt(r.get("pages_per_cpu_s_vs_plain"), 2),
            fmt(r.get("pages_per_cpu_s_vs_crawl"), 2), fmt(r["cpu_ms_per_page"], 2),
            fmt(r["peak_pss_mb"]), fmt(r["steady_pss_mb"]), fmt(r.get("mb_per_page_per_s"), 2),
            fmt(r["first_item_s"], 2),
        ])
    nice = result.get("contender_nice")
    server_nice = result.get("server", {}).get("server_nice")
    title = result["title"]
    if nice is not None:
        title += f" (server nice {server_nice or 0}, contenders nice {nice})"
    lines = [title, format_table(headers, rows)]
    for contender, reason in result.get("skipped_contenders", {}).items():
        lines.append(f"  {contender}: skipped: {reason}")
    for r in result["rows"]:
        if r.get("error"):
            lines.append(f"  {r['name']} FAILED (exit {r['returncode']}): {r['error']}")
        if r["family"] == "predecessor-pid":
            lines.append(f"  {r['name']}: the predecessor as written (start URLs by pid modulo "
                         f"N) covered {r.get('sites_covered')} of {result['urls']} sites, "
                         f"{r.get('sites_crawled_twice_or_more')} crawled twice or more")
    lines += target_lines(name, result["rows"])
    return "\n".join(lines)


def target_lines(workload: str, rows: list[dict[str, Any]]) -> list[str]:
    """Issues 8 and 17's targets, as measured here (printed, never asserted)."""
    by_name = {r["name"]: r for r in rows}
    runners = sorted((r for r in rows if r["family"] == "runner"), key=lambda r: r["workers"])
    if not runners:
        return []
    top = runners[-1]
    out = []
    if workload == "cpu":
        for metric, goal, label in (("pages_per_s_vs_plain", 2.5, "pages/s"),
                                    ("pages_per_cpu_s_vs_plain", 1.5, "pages per CPU-s")):
            value = top.get(metric)
            if value is not None:
                out.append(f"  target: {top['name']} {label} ≥ {goal}× plain Scrapy: "
                           f"{value:.2f}× — {'met' if value >= goal else 'NOT met'}")
        peak = top.get("peak_pss_mb")
        if peak is not None and top["workers"] >= 20:
            out.append(f"  target: {top['name']} peak tree PSS ≤ {PEAK_PSS_TARGET_MB} MB: "
                       f"{peak:.0f} MB — {'met' if peak <= PEAK_PSS_TARGET_MB else 'NOT met'}")
    else:
        pred = by_name.get(f"predecessor-{top['workers']}")
        if pred and pred.get("pages_per_s") and top.get("pages_per_s"):
            value = top["pages_per_s"] / pred["pages_per_s"]
            out.append(f"  target: {top['name']} pages/s ≥ {pred['name']}'s: {value:.2f}× — "
                       f"{'met' if value >= 1.0 else 'NOT met'}")
    return out


def render(results: dict[str, Any]) -> str:
    parts = [f"throughput ({results['scale']}: {results['sites']} sites × {results['pages']} "
             f"pages of ~{PAGE_KB:.0f} KB) on {describe_machine(results['machine'])}"]
    if describe_load(results):
        parts[0] += f"; {describe_load(results)}"
    if results.get("collector_settings"):
        parts[0] += f"\ncollector contenders with --set {results['collector_settings']}"
    parts += [render_workload(name, result) for name, result in results["workloads"].items()]
    return "\n\n".join(parts)


# --- main ----------------------------------------------------------------------------------------


def _int_list(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


def _setting(text: str) -> tuple[str, Any]:
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key.isupper():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (a Scrapy setting)")
    return key, yaml.safe_load(value)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.throughput",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="full")
    parser.add_argument("--workloads", default="cpu,latency",
                        help="comma-separated: cpu,latency")
    parser.add_argument("--workers", type=_int_list, default=None,
                        help="runner and predecessor worker counts (default: 2,4,8,20 full; "
                             "2 tiny)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run every contender K times (interleaved); rows are medians")
    parser.add_argument("--only", default=None,
                        help="comma-separated contender names or families to run")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON results (default: benchmarks/results/throughput.json, or "
                             "throughput-tiny.json for --scale tiny)")
    parser.add_argument("--plot", type=Path, default=None,
                        help="PNG path (default: next to --out); 'none' to skip")
    parser.add_argument("--nice", type=int, default=None,
                        help="niceness of the contenders (default: 0 when the server could be "
                             f"given priority, i.e. as root, else {CONTENDER_NICE}), so that "
                             "their process count cannot starve the local server")
    parser.add_argument("--set", type=_setting, action="append", default=[], metavar="KEY=VALUE",
                        help="a Scrapy setting for the collector's contenders (runner, scrapy "
                             "crawl docs) only, to try a settings change; repeatable")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scale = SCALES[args.scale]
    workers = args.workers or scale.workers
    COLLECTOR_SETTINGS.update(dict(args.set))
    entrants = contenders(workers)
    if args.only:
        wanted = {w.strip() for w in args.only.split(",")}
        entrants = [c for c in entrants if c.name in wanted or c.family in wanted]
    work = Path(tempfile.mkdtemp(prefix="hubcollect-throughput-"))
    results: dict[str, Any] = {
        "benchmark": "throughput", "scale": args.scale, "sites": scale.sites,
        "pages": scale.pages, "page_kb": PAGE_KB, "workers": list(workers),
        "repeat": args.repeat, "collector_settings": dict(args.set),
        "machine": machine_info(),
        "command": " ".join(["python -m benchmarks.throughput", *(argv or sys.argv[1:])]),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "workloads": {},
    }
    try:
        for name in [w.strip() for w in args.workloads.split(",") if w.strip()]:
            if name not in WORKLOADS:
                print(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}",
                      file=sys.stderr)
                return 2
            results["workloads"][name] = run_workload(name, work, scale, entrants, args.repeat,
                                                      args.nice)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work directory kept: {work}")
    results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    out = args.out or default_results("throughput", args.scale)
    write_json(out, results)
    print()
    print(render(results))
    print(f"\nresults: {out}")
    plot_path = args.plot or out.with_suffix(".png")
    if str(plot_path) != "none":
        from benchmarks.plot import plot_throughput

        reason = plot_throughput(results, plot_path)
        print(f"plot: {plot_path}" if reason is None else f"plot skipped: {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
