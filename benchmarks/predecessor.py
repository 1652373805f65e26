"""The predecessor's design, written faithfully, as a contender.

    python -m benchmarks.predecessor --workers N --out DIR --summary FILE URL...

N ``multiprocessing`` workers, forked at start. Each takes the start URLs whose index is its
pid modulo N (``--assign pid``, as written), has its own ``requests.Session`` and its own
seen-set, fetches one page at a time, finds links with a regular expression (no HTML parsing,
no robots.txt, no retries), follows those under the start URL's directory and saves every page
raw to a file. That is all it did: no text extraction, no dedup store, no item file.

Pid modulo N only splits the work when the N workers' pids are consecutive; threads and other
processes take pid numbers too (each worker's result queue starts a feeder thread), so in
practice some sites are crawled twice and others not at all. ``--assign index`` gives worker i
the residue i instead, which is what pid-modulo was meant to do: the benchmark measures that
(the same work as the other contenders) and reports what ``--assign pid`` covered.

The summary is one JSON object: pages saved, the start URLs each worker took, the time of the
first saved page.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import re
import time
from collections import deque
from pathlib import Path
from urllib.parse import urldefrag, urljoin

import requests

LINK_RE = re.compile(r"""<a\s[^>]*?href=["']([^"'#][^"']*)["']""", re.IGNORECASE)
SKIPPED = (".pdf", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".zip", ".gz", ".tar")


def site_prefix(url: str) -> str:
    return url[: url.rfind("/") + 1]


def crawl_site(session: requests.Session, start_url: str, out: Path,
               first: dict[str, float]) -> int:
    prefix = site_prefix(start_url)
    seen = {start_url}
    queue = deque([start_url])
    saved = 0
    while queue:
        url = queue.popleft()
        try:
            response = session.get(url, timeout=30)
        except requests.RequestException:
            continue
        if response.status_code != 200 or "html" not in response.headers.get(
                "Content-Type", ""):
            continue
        name = hashlib.sha1(url.encode()).hexdigest() + ".html"
        (out / name).write_bytes(response.content)
        saved += 1
        first.setdefault("at", time.time())
        for href in LINK_RE.findall(response.text):
            link, _ = urldefrag(urljoin(url, href))
            if link.startswith(prefix) and link not in seen and not link.endswith(SKIPPED):
                seen.add(link)
                queue.append(link)
    return saved


def worker(n: int, index: int, assign: str, start_urls: list[str], out: Path,
           results: multiprocessing.Queue) -> None:
    slot = os.getpid() % n if assign == "pid" else index
    session = requests.Session()
    mine = [url for i, url in enumerate(start_urls) if i % n == slot]
    first: dict[str, float] = {}
    saved = sum(crawl_site(session, url, out, first) for url in mine)
    results.put({"pid": os.getpid(), "slot": slot, "sites": mine, "pages": saved,
                 "first_at": first.get("at")})


def run(n: int, start_urls: list[str], out: Path, assign: str = "pid") -> dict[str, object]:
    out.mkdir(parents=True, exist_ok=True)
    results: multiprocessing.Queue = multiprocessing.Queue()
    workers = [multiprocessing.Process(target=worker,
                                       args=(n, i, assign, start_urls, out, results))
               for i in range(n)]
    for process in workers:
        process.start()
    reports = [results.get() for _ in workers]
    for process in workers:
        process.join()
    taken = [url for report in reports for url in report["sites"]]
    firsts = [r["first_at"] for r in reports if r["first_at"]]
    return {
        "pages": sum(int(r["pages"]) for r in reports),
        "first_item_at": min(firsts) if firsts else None,
        "sites": len(start_urls),
        "sites_covered": len(set(taken)),
        "sites_crawled_twice_or_more": len(taken) - len(set(taken)),
        "assign": assign,
        "workers": reports,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--summary", type=Path, required=True)
    parser.add_argument("--assign", choices=("pid", "index"), default="pid",
                        help="worker i takes start URLs with index %% N == pid %% N (as written) "
                             "or == i")
    parser.add_argument("urls", nargs="+")
    args = parser.parse_args(argv)
    multiprocessing.set_start_method("fork")
    summary = run(args.workers, args.urls, args.out, args.assign)
    args.summary.write_text(json.dumps(summary), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
