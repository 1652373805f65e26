"""A forked worker's fixed cost per round: CPU and page faults up to each of Scrapy's signals.

    python -m benchmarks.startup [--workers 10]

Does what the runner does (``runner.supervision.supervisor.preload``, then ``fork``) and runs, in
each child, exactly the worker's ``scrapy crawl docs -a shard=i/N`` against the fake docs host with
one page per site (robots.txt and that page), one child after the other. Each child records
``getrusage`` (user + system CPU, minor page faults) at the end of ``process_options``, when the
crawler exists, at ``spider_opened``, ``engine_started``, each ``response_received`` and
``spider_closed``, and at exit. Prints the median of each step over the workers; results:
``benchmarks/results/startup.json``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import itertools
import os
import resource
import signal
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import (
    REPO_ROOT,
    collector_env,
    describe_machine,
    format_table,
    machine_info,
    publish,
    write_collector_config,
)

STEPS = ("process_options", "crawler", "spider_opened", "engine_started", "first response",
         "spider_closed", "exit")


def usage() -> tuple[float, int]:
    """CPU milliseconds (user + system) and minor faults of this process so far."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return (used.ru_utime + used.ru_stime) * 1000, used.ru_minflt


def marked_crawl(shard: str) -> list[tuple[str, float, int]]:
    """In a forked child: the worker's crawl, with ``usage()`` at each step."""
    from scrapy import signals
    from scrapy.cmdline import execute

    from scraper.commands.crawl import Command

    marks = [("fork", *usage())]

    def mark(step: str) -> None:
        if step != "first response" or all(m[0] != step for m in marks):
            marks.append((step, *usage()))

    process_options, create_crawler = Command.process_options, Command._create_crawler

    def process_options_marked(self: Command, *args: Any) -> None:
        process_options(self, *args)
        mark("process_options")

    def create_crawler_marked(self: Command, *args: Any) -> Any:
        crawler = create_crawler(self, *args)
        mark("crawler")
        for step, crawl_signal in (("spider_opened", signals.spider_opened),
                                   ("engine_started", signals.engine_started),
                                   ("first response", signals.response_received),
                                   ("spider_closed", signals.spider_closed)):
            crawler.signals.connect(lambda step=step, **_: mark(step), signal=crawl_signal,
                                    weak=False)
        return crawler

    Command.process_options = process_options_marked  # type: ignore[method-assign]
    Command._create_crawler = create_crawler_marked  # type: ignore[method-assign]
    with contextlib.suppress(SystemExit):
        execute(["scrapy", "crawl", "docs", "-a", f"shard={shard}"])
    mark("exit")
    return marks


def run_child(shard: str) -> dict[str, tuple[float, int]]:
    """Fork, crawl, and return each step's (CPU ms, faults) since the step before."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        # as a runner's worker has it (runner/supervision/worker.py): Ctrl-C is the runner's,
        # and the crawl returns to its caller instead of ending the process itself
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        marks = marked_crawl(shard)
        steps = {step: (cpu - prev_cpu, faults - prev_faults) for (_, prev_cpu, prev_faults),
                 (step, cpu, faults) in itertools.pairwise(marks)}
        os.write(write_end, repr(steps).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return ast.literal_eval(data.decode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.startup", description=__doc__)
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" /
                        "startup.json")
    args = parser.parse_args(argv)
    from tests.support.fakes.launcher import start_fake_docs

    with tempfile.TemporaryDirectory(prefix="hubcollect-startup-") as tmp:
        work = Path(tmp)
        fake = start_fake_docs(work / "fake", host="127.0.0.2", sites=args.workers, pages=1)
        try:
            urls = [f"{fake.url()}/site{k}/" for k in range(args.workers)]
            config = write_collector_config(work / "home", urls, max_pages=1)
            os.environ.update(collector_env(config))
            os.environ["SCRAPY_SETTINGS_MODULE"] = "scraper.settings"
            os.chdir(REPO_ROOT)
            from runner.supervision.supervisor import preload

            preload()
            runs = [run_child(f"{i}/{args.workers}") for i in range(args.workers)]
        finally:
            fake.stop()
    medians = {}
    for step in STEPS:
        cpu = [run[step][0] for run in runs if step in run]
        faults = [run[step][1] for run in runs if step in run]
        medians[step] = {"cpu_ms": round(statistics.median(cpu), 1),
                         "faults": int(statistics.median(faults))}
    totals = [(sum(c for c, _ in run.values()), sum(f for _, f in run.values())) for run in runs]
    medians["total"] = {"cpu_ms": round(statistics.median(t[0] for t in totals), 1),
                        "faults": int(statistics.median(t[1] for t in totals))}
    results = {"machine": machine_info(), "command": ["python", "-m", "benchmarks.startup",
                                                       *(argv or sys.argv[1:])],
               "workers": args.workers, "steps": medians, "runs": runs}
    return publish(args.out, results, render)


def render(results: dict[str, Any]) -> str:
    rows = [(step, f"{value['cpu_ms']:.1f}", value["faults"])
            for step, value in results["steps"].items()]
    return "\n".join([
        describe_machine(results["machine"]),
        f"a forked docs worker's fixed cost per round, median of {results['workers']} workers "
        "on 1-page sites (CPU and faults since the step before)",
        format_table(("step", "CPU ms", "minor faults"), rows)])


if __name__ == "__main__":
    raise SystemExit(main())
