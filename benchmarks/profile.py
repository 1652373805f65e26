"""Where a docs worker's CPU goes, on the throughput benchmark's CPU-bound workload.

    python -m benchmarks.profile                # `scrapy crawl docs`, 20 sites × 300 pages
    python -m benchmarks.profile --workers 20   # the runner: every worker sampled
    python -m benchmarks.profile --sites 2 --pages 20 --keep

Starts the benchmark's nginx (``benchmarks/nginx.py``), runs the collector under ``py-spy record``
(``pip install py-spy``; following the runner's forked workers) and prints the share of the
samples in each part of a page's processing, from the innermost frame that names one: our parsing
(Markdown walk, metadata, links, tree), our stores and pipelines, Scrapy's HTTP client,
middlewares and engine. py-spy counts a process that is runnable but waiting for a CPU as busy:
on a loaded machine code just after a system call (sends, writes) is over-represented.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import (
    PYTHON,
    REPO_ROOT,
    collector_env,
    collector_pages,
    runner_command,
    write_collector_config,
)

# (label, pattern over "file:function" frames); the first that matches a sample's stack wins.
CATEGORIES: list[tuple[str, str]] = [
    ("idle threads", r"threading.py:Condition.wait|thread.py:_worker"),
    ("start-up and close (imports, settings, crawler, stores)",
     r"_bootstrap|cmdline.py:_get_commands|Crawler.__init__|_apply_settings|_load_handler|"
     r"open_spider|close_spider|cmdline.py:execute \((?!.*_run_command)"),
    ("Markdown walk (scraper/docpages/markdown.py)", r"markdown.py:convert \("),
    ("fidelity check (scraper/docpages/fidelity.py)", r"fidelity.py:check \("),
    ("page metadata: title, canonical, lang, date, main element",
     r"docpages/extract.py:(canonical_url|page_lang|page_version|last_modified|main_content|"
     r"base_url|extract_page) \("),
    ("tree building (lxml)", r"extract.py:page_selector|selector.py:Selector.__init__|"
     r"TextResponse.text"),
    ("links to follow", r"extract.py:follow_links|docs.py:DocsSpider.new_links"),
    ("deltafetch store",
     r"deltafetch.py:ShardedDeltaFetch\.(_seen_recently|_record|_replay|_walk_links|item_passed|"
     r"request_dropped)|sqliteurls.py"),
    ("content-hash pipeline", r"contenthash.py|sqlitehashes.py"),
    ("item store (JSON Lines)", r"itemstore.py"),
    ("gzip (HttpCompressionMiddleware)", r"httpcompression.py"),
    ("HTTP client (Twisted, HTTP11 handler)",
     r"http11.py|_newclient.py|tcp.py|abstract.py:FileDescriptor.doWrite"),
    ("downloader middlewares", r"downloader/middleware.py"),
    ("Request objects", r"Request.__init__"),
    ("scheduler, dupefilter", r"scheduler.py|dupefilters.py"),
    ("periodic timers (memusage, logstats, worker state, log rotation)",
     r"memusage.py|logstats.py|workerstate.py|logrotate.py"),
    ("gap ledger", r"ledger.py:"),
    ("logging", r"logging/__init__.py"),
]
OTHER = "Scrapy's engine, spider middlewares, asyncio/Twisted glue"
FRAME = re.compile(r"(.*) \((.*?):\d+\)$")


def frame_key(frame: str) -> str:
    match = FRAME.match(frame)
    if not match:
        return frame
    function, path = match.groups()
    path = re.sub(r".*site-packages/|.*/lib/python3\.\d+/", "", path)
    path = path.replace(str(REPO_ROOT) + "/", "")
    return f"{path}:{function} ("


def categorise(raw: Path, workers_only: bool) -> tuple[int, collections.Counter[str]]:
    """Samples per category from py-spy's ``--format raw`` (``stack count`` lines)."""
    counts: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or (workers_only and "run_worker" not in stack):
            continue
        frames = ";".join(frame_key(f) for f in stack.split(";"))
        label = next((label for label, pattern in CATEGORIES if re.search(pattern, frames)), OTHER)
        counts[label] += int(n)
        total += int(n)
    return total, counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=0,
                        help="profile `python -m runner --workers N --once` (default: one "
                             "`scrapy crawl docs`)")
    parser.add_argument("--sites", type=int, default=20)
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not os.access(spy, os.X_OK):
        print("py-spy is not installed (pip install py-spy)", file=sys.stderr)
        return 2
    from benchmarks.nginx import Nginx

    work = Path(tempfile.mkdtemp(prefix="hubcollect-profile-"))
    try:
        with Nginx(work / "nginx", args.sites, args.pages, 6.0) as nginx:
            config = write_collector_config(
                work / "home", [f"{nginx.url}/site{k}/" for k in range(args.sites)])
            if args.workers:
                crawl = [*runner_command(), "--config", str(config), "--workers",
                         str(args.workers), "--once", "--spiders", "docs"]
            else:
                crawl = [PYTHON, "-m", "scrapy", "crawl", "docs"]
            raw = work / "samples.txt"
            subprocess.run([spy, "record", "--subprocesses", "-r", str(args.rate), "--format",
                            "raw", "-o", str(raw), "--", *crawl],
                           cwd=REPO_ROOT, env=collector_env(config), check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            pages = collector_pages(work / "home" / "data")
        total, counts = categorise(raw, workers_only=bool(args.workers))
        busy = total - counts.pop("idle threads", 0)
        who = f"runner --workers {args.workers} (workers only)" if args.workers else \
            "scrapy crawl docs"
        print(f"{who}: {pages} pages, {busy} busy samples of {total}")
        for label, count in counts.most_common():
            print(f"{100 * count / max(busy, 1):5.1f}%  {label}")
    finally:
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
