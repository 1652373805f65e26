"""Complete search rounds: requests spent per 1000 repositories, against the ideal.

    python -m benchmarks.search [--scale full|tiny]

One ``scrapy crawl search`` per round against the fake GitHub, whose long-tail queries hold
thousands of repositories (40% with no star) and whose search honours ``stars:``/``created:``:

1. first round: no plan yet, the queries are sliced (probes) and every slice paged;
2. every repository's star count changed (the fake's generation 1 adds 1–17 stars to each):
   the plan is re-used and re-split where a slice grew past 1000;
3. nothing changed: every slice page is asked with its ETag (304, free).

Per round: pages, probes (``per_page=1`` requests), answers counted by the budget (not 304),
repositories collected and whether that is the complete result set, and requests per 1000
repositories against the ideal of 10 pages of 100 per 1000 (``× ideal``). The last column is
what the round would take on a real token (30 search requests per minute). Results:
``benchmarks/results/search.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import yaml

from benchmarks.common import (
    default_results,
    describe_machine,
    format_table,
    machine_info,
    publish,
)
from tests.support.collector import Collector
from tests.support.fakes.github import parse_search, search_results
from tests.support.fakes.launcher import start_fake_github

SCALES = {
    "full": ["longtail10000", "longtail6000 stars:<=100", "huge created:>=2012-01-01"],
    "tiny": ["longtail3000"],
}
LIMIT, WINDOW = 120, 2.0  # the fake's budget: fast, but paced by the shared budget all the same
IDEAL_PER_1000 = 10  # pages of 100
TOKEN_PER_MINUTE = 30
ROUNDS = ((0, "first round (plan)"), (1, "stars changed"), (1, "unchanged"))


def expected(query: str, generation: int) -> set[int]:
    text, keep = parse_search(query)
    return {r.id for r in search_results(text, generation, "stars", "desc") if keep(r)}


def run_round(collector: Collector, fake: Any, queries: list[str],
              generation: int) -> dict[str, Any]:
    fake.control(reset_stats=True, generation=generation)
    before = set(collector.item_files("search"))
    began = time.time()
    result = collector.crawl("search", timeout=1800)
    wall = time.time() - began
    if result.returncode != 0:
        raise RuntimeError(f"scrapy crawl search exited {result.returncode}: "
                           f"{collector.log('search')[-2000:]}")
    stats = fake.stats()
    requests = [r for r in stats["requests"] if r["path"] == "/search/repositories"]
    probes = sum(1 for r in requests if parse_qs(r["query"]).get("per_page") == ["1"])
    items = [json.loads(line) for path in collector.item_files("search") if path not in before
             for line in path.read_text().splitlines()]
    result_set = sum(len(expected(q, generation)) for q in queries)
    collected = {(i["query"], i["id"]) for i in items}
    complete = all({i for q2, i in collected if q2 == q} == expected(q, generation)
                   for q in queries) if items else None
    counted = sum(1 for r in requests if r["status"] == 200)
    return {
        "generation": generation, "wall_s": round(wall, 1), "requests": len(requests),
        "pages": len(requests) - probes, "probes": probes, "counted": counted,
        "not_modified": sum(1 for r in requests if r["status"] == 304),
        "result_set": result_set, "items": len(items), "distinct": len(collected),
        "complete": complete, "violations": stats["violations"] + stats["secondary_violations"],
        "per_1000": 1000 * len(requests) / result_set,
        "counted_per_1000": 1000 * counted / result_set,
        "token_minutes": counted / TOKEN_PER_MINUTE,
    }


def render(results: dict[str, Any]) -> str:
    rows = []
    for (_, label), r in zip(ROUNDS, results["rounds"], strict=True):
        rows.append([label, r["result_set"], r["pages"], r["probes"], r["counted"],
                     r["not_modified"], r["items"],
                     {True: "yes", False: "NO", None: "— (304)"}[r["complete"]],
                     f"{r['per_1000']:.1f}", f"{r['per_1000'] / IDEAL_PER_1000:.2f}×",
                     f"{r['counted_per_1000']:.1f}", r["violations"],
                     f"{r['token_minutes']:.1f} min"])
    headers = ["round", "repos", "pages", "probes", "counted", "304", "items", "complete",
               "req/1000", "× ideal", "counted/1000", "violations", "at 30/min"]
    head = (f"complete search: {', '.join(results['queries'])} — "
            f"{results['machine_summary']}")
    notes = ("req/1000 = (pages + probes) per 1000 repositories in the result set; ideal = "
             f"{IDEAL_PER_1000} pages of 100; counted = answers the budget pays for (a 304 is "
             "free); 'at 30/min' = counted ÷ 30, a token's search limit")
    return "\n".join([head, format_table(headers, rows), notes])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.search",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=tuple(SCALES), default="full")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    queries = SCALES[args.scale]
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        fake = start_fake_github(Path(tmp) / "fake", search_limit=LIMIT, search_window=WINDOW)
        try:
            collector = Collector(Path(tmp) / "collector")
            collector.configure(github=fake, spiders={"search": {"queries": queries,
                                                                 "per_page": 100}})
            config = yaml.safe_load(collector.config_path.read_text())
            config["github"]["limits"] = {"search": {"limit": LIMIT, "window": WINDOW}}
            collector.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
            rounds = []
            for generation, label in ROUNDS:
                print(f"search: {label} ...", flush=True)
                rounds.append(run_round(collector, fake, queries, generation))
        finally:
            fake.stop()
    results = {"scale": args.scale, "queries": queries, "machine": machine,
               "machine_summary": describe_machine(machine), "rounds": rounds}
    return publish(args.out or default_results("search", args.scale), results, render)


if __name__ == "__main__":
    raise SystemExit(main())
