"""``python -m benchmarks.hostile``: one worker's peak memory on each hostile answer shape.

Every shape the hardening passes met, one ``scrapy crawl`` each (exactly what a runner worker
runs) against tests/support/fakes/hostile.py, one answer per crawl, with a healthy answer of the
same
spider as the baseline measured in the same run: trending pages of 15 MB of cells, of 180,000
rows and of 3,000 rows; search answers of 1,000,000 results, of JSON nested 4,000 deep, of more
results than ``per_page`` and of results of the wrong types; docs pages of 380,000 cells, of
2,000 columns, of 100,000 list items, 50,000 links, 1,600 nested divs and 15 MB of links. The
peak is the worker's own ``VmHWM`` (the kernel's high-water mark of its resident set, read every
20 ms until it exits), printed against the 200 MB bound every worker must stay under.

Results: ``benchmarks/results/hostile.json`` (``--scale tiny``: ``hostile-tiny.json``, the
baseline and one shape per spider).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import (
    REPO_ROOT,
    collector_env,
    default_results,
    fmt,
    format_table,
    machine_info,
    publish,
    ratio,
)

BOUND_MB = 200.0
"""What one worker may hold on any single answer (README, "What survives what")."""
GENEROUS = {"search": {"limit": 100000, "window": 60}, "core": {"limit": 100000, "window": 3600}}


@dataclass(frozen=True)
class Shape:
    spider: str
    name: str
    what: str
    entry: str  # a trending language, a search query or a docs path on the hostile server
    baseline: bool = False


SHAPES = (
    Shape("trending", "normal", "25 rows (GitHub's page)", "normal", baseline=True),
    Shape("trending", "cells", "15 MB of <td>x", "cells"),
    Shape("trending", "rowflood", "180,000 rows in 13 MB", "rowflood"),
    Shape("trending", "flood", "3,000 rows", "flood"),
    Shape("search", "good", "3 results", "good", baseline=True),
    Shape("search", "million", "1,000,000 {\"id\": n} in 14 MB", "million"),
    Shape("search", "deep", "JSON nested 4,000 deep", "deep"),
    Shape("search", "overfull", "5 results where per_page is 4", "overfull"),
    Shape("search", "badtypes", "ids that are lists, topics a number", "badtypes"),
    Shape("docs", "good", "a small page", "/site/good1.html", baseline=True),
    Shape("docs", "cells", "380,000 cells in 1.9 MB", "/shapes/cells.html"),
    Shape("docs", "columns", "2,000 columns × 190 rows", "/shapes/columns.html"),
    Shape("docs", "items", "100,000 list items", "/dense/items.html"),
    Shape("docs", "big", "50,000 links, 20,000 items", "/dense/big.html"),
    Shape("docs", "nested", "1,600 nested divs", "/dense/nested.html"),
    Shape("docs", "links", "15 MB of links (cut at 2 MB)", "/dense/links.html"),
)
TINY = ("trending:normal", "trending:cells", "search:good", "search:million", "docs:good",
        "docs:cells")


def configure(home: Path, server: str, shape: Shape) -> Path:
    spiders: dict[str, Any] = {name: {"weight": 0} for name in ("trending", "search", "docs")}
    if shape.spider == "trending":
        spiders["trending"] = {"languages": [shape.entry], "periods": ["daily"]}
    elif shape.spider == "search":
        spiders["search"] = {"queries": [shape.entry], "per_page": 4, "complete": False}
    else:
        spiders["docs"] = {"start_urls": [server + shape.entry], "max_pages_per_site": 1}
    config = {"data_dir": str(home / "data"), "round_interval": 0, "spiders": spiders,
              "github": {"web_url": server, "api_url": f"{server}/api", "web_min_interval": 0,
                         "limits": GENEROUS}}
    home.mkdir(parents=True, exist_ok=True)
    path = home / "collector.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def crawl(home: Path, server: str, shape: Shape, timeout: float) -> dict[str, Any]:
    from tests.support.collector import peak_rss_mb

    config = configure(home, server, shape)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "scrapy", "crawl", shape.spider],
                            cwd=REPO_ROOT, env=collector_env(config),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = 0.0
    timed_out = False
    while proc.poll() is None:
        peak = max(peak, peak_rss_mb(proc.pid) or 0.0)
        if time.monotonic() - started > timeout:
            timed_out = True
            proc.kill()
        time.sleep(0.02)
    stderr = proc.communicate()[1]
    log_path = home / "data" / "logs" / f"{shape.spider}-0of1.log"
    log = log_path.read_text(encoding="utf-8") if log_path.exists() else ""
    items = sum(1 for path in (home / "data" / "items" / shape.spider).glob("*.jsonl")
                for _ in path.open(encoding="utf-8"))
    return {"spider": shape.spider, "shape": shape.name, "what": shape.what,
            "baseline": shape.baseline, "returncode": proc.returncode, "timed_out": timed_out,
            "wall_s": round(time.monotonic() - started, 2), "peak_rss_mb": round(peak, 1),
            "items": items, "error_lines": log.count("] ERROR: "),
            "tracebacks": (log + stderr).count("Traceback")}


def render(results: dict[str, Any]) -> str:
    rows = []
    baselines = {row["spider"]: row["peak_rss_mb"] for row in results["rows"] if row["baseline"]}
    for row in results["rows"]:
        within = row["peak_rss_mb"] <= results["bound_mb"] and not row["timed_out"]
        rows.append([row["spider"], row["what"] + (" (baseline)" if row["baseline"] else ""),
                     fmt(row["peak_rss_mb"]), fmt(ratio(row["peak_rss_mb"],
                                                        baselines.get(row["spider"])), 2),
                     "yes" if within else "**NO**", row["items"], row["error_lines"],
                     row["tracebacks"], fmt(row["wall_s"], 1)])
    table = format_table(["spider", "answer", "peak RSS MB", "× baseline",
                          f"≤ {results['bound_mb']:.0f} MB", "items", "ERROR lines",
                          "tracebacks", "s"], rows)
    worst = {spider: max(row["peak_rss_mb"] for row in results["rows"]
                         if row["spider"] == spider) for spider in baselines}
    summary = ", ".join(f"{spider} {mb:.0f} MB" for spider, mb in worst.items())
    return (f"{table}\n\npeak RSS per spider, worst answer: {summary} "
            f"(bound {results['bound_mb']:.0f} MB)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hostile",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=("tiny", "full"), default="full")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds one crawl may take before it is killed (and reported)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    from tests.support.fakes.launcher import start_fake_hostile

    shapes = [s for s in SHAPES if args.scale == "full" or f"{s.spider}:{s.name}" in TINY]
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        server = start_fake_hostile(Path(tmp) / "server")
        try:
            rows = []
            for index, shape in enumerate(shapes):
                row = crawl(Path(tmp) / f"run{index}", server.url(), shape, args.timeout)
                print(f"{shape.spider:9} {shape.name:10} peak {row['peak_rss_mb']:6.1f} MB "
                      f"({row['wall_s']:.1f} s)", flush=True)
                rows.append(row)
        finally:
            server.stop()
    results = {"benchmark": "hostile", "scale": args.scale, "bound_mb": BOUND_MB,
               "machine": machine_info(), "command": "python -m benchmarks.hostile"
               + ("" if args.scale == "full" else f" --scale {args.scale}"), "rows": rows}
    return publish(args.out or default_results("hostile", args.scale), results, render)


if __name__ == "__main__":
    raise SystemExit(main())
