"""``python -m benchmarks.catalog``: the cost of building ``catalog.sqlite`` from N items.

Writes N synthetic items in the documented item format (README "What is written where") as a
collector would — files of ``--per-file`` lines under ``items/{spider}/``, a mix of trending
page snapshots (25 rows each), trending rows, search results and docs pages — then runs
``python -m runner catalog`` on them as a child process and reports items/s and the child's
peak RSS (``wait4``'s ``ru_maxrss``). The baseline, in the same run, is a child that only reads
and ``json.loads`` every line: the share of the build that is the catalog's own work.
Then one more round of files is added and the incremental update is timed.

    python -m benchmarks.catalog                     # 1,000,000 items (~ a few minutes)
    python -m benchmarks.catalog --items 20000       # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import REPO_ROOT, RESULTS_DIR, machine_info

MIX = (("snapshot", 0.05), ("trending", 0.15), ("search", 0.40), ("docs", 0.40))
"""Share of the lines per kind: a trending round writes a snapshot per page and few changed
rows; search and docs write what changed."""
ROWS_PER_PAGE = 25
PERIODS = ("daily", "weekly", "monthly")
LANGUAGES = (None, "python", "rust", "go")
WORDS = ("async", "cache", "crawler", "delta", "engine", "graph", "index", "kernel", "parser",
         "query", "router", "stream")


def _stamp(epoch: float, ms: bool = False) -> str:
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch))
    return text + (f".{int(epoch % 1 * 1000):03d}Z" if ms else "Z")


class ItemWriter:
    """Deterministic synthetic items, one file per ``per_file`` lines and spider."""

    def __init__(self, items_root: Path, seed: int = 14, start: float = 1_780_000_000.0) -> None:
        self.root = items_root
        self.rng = random.Random(seed)
        self.clock = start
        self.files = 0

    def _repo(self) -> tuple[int, str]:
        n = int(self.rng.paretovariate(1.2)) % 50_000
        return n, f"owner{n % 997}/{self.rng.choice(WORDS)}-{n}"

    def line(self, kind: str) -> dict[str, Any]:
        self.clock += 0.05
        base = {"spider": "trending" if kind == "snapshot" else kind, "shard": "0/1",
                "collected_at": _stamp(self.clock),
                "content_hash": f"{self.rng.getrandbits(256):064x}"}
        if kind == "snapshot":
            rows = []
            for rank in range(1, ROWS_PER_PAGE + 1):
                n, name = self._repo()
                rows.append({"rank": rank, "full_name": name, "description": f"{name} tool",
                             "language": "Python", "stars": n * 3 + int(self.clock) % 500,
                             "forks": n, "period_stars": rank, "built_by": ["a", "b"]})
            return {**base, "observed_at": _stamp(self.clock, ms=True),
                    "period": self.rng.choice(PERIODS),
                    "trending_language": self.rng.choice(LANGUAGES),
                    "url": "https://github.com/trending?since=daily", "rows": rows}
        n, name = self._repo()
        if kind == "trending":
            owner, repo = name.split("/")
            return {**base, "full_name": name, "owner": owner, "name": repo,
                    "url": f"https://github.com/{name}", "description": "x", "language": "Go",
                    "stars": n, "forks": 1, "period_stars": 2, "period": "daily",
                    "trending_language": None, "rank": 3, "built_by": []}
        if kind == "search":
            return {**base, "id": n, "full_name": name, "html_url": f"https://github.com/{name}",
                    "description": "a repository", "language": "Python",
                    "stargazers_count": n * 3 + int(self.clock) % 1000, "forks_count": n,
                    "open_issues_count": 4, "topics": ["web-scraping"], "license": "MIT",
                    "created_at": "2020-01-01T00:00:00Z", "updated_at": base["collected_at"],
                    "pushed_at": base["collected_at"], "archived": False, "query": "q"}
        page = self.rng.randrange(20_000)
        text = " ".join(self.rng.choice(WORDS) for _ in range(80))
        return {**base, "url": f"https://docs.example.org/p/{page}.html",
                "title": f"Page {page}", "headings": ["Intro", "API"],
                "markdown": f"# Page {page}\n\n## Intro\n\n{text}\n", "text": text,
                "canonical_url": None, "lang": "en", "last_modified": None}

    def write(self, n_items: int, per_file: int) -> int:
        """Write ``n_items`` lines; returns the bytes written."""
        kinds = [kind for kind, _ in MIX]
        weights = [share for _, share in MIX]
        written = 0
        pending: dict[str, list[str]] = {}
        for _ in range(n_items):
            kind = self.rng.choices(kinds, weights)[0]
            spider = "trending" if kind == "snapshot" else kind
            lines = pending.setdefault(spider, [])
            lines.append(json.dumps(self.line(kind), ensure_ascii=False))
            if len(lines) >= per_file:
                written += self._flush(spider, lines)
        for spider, lines in pending.items():
            if lines:
                written += self._flush(spider, lines)
        return written

    def _flush(self, spider: str, lines: list[str]) -> int:
        directory = self.root / spider
        directory.mkdir(parents=True, exist_ok=True)
        self.files += 1
        data = ("\n".join(lines) + "\n").encode()
        (directory / f"{spider}-0of1-{self.files:07d}.jsonl").write_bytes(data)
        lines.clear()
        return len(data)


PARSE_ONLY = """
import json, pathlib, sys
n = 0
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.jsonl")):
    with open(path, "rb") as handle:
        for line in handle:
            json.loads(line)
            n += 1
print(n)
"""


def measure(argv: list[str], cwd: Path) -> dict[str, Any]:
    """Run a child; its wall time, CPU and peak RSS (ru_maxrss, of the child alone)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    out, err = proc.stdout.read(), proc.stderr.read()
    if proc.returncode:
        raise SystemExit(f"{argv}: exit {proc.returncode}: {err[-2000:]}")
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "stdout": out.strip()}


def run(n_items: int, per_file: int, round_items: int, workdir: Path) -> dict[str, Any]:
    home = workdir / "home"
    data = home / "data"
    home.mkdir(parents=True)
    config = home / "collector.yaml"
    config.write_text(yaml.safe_dump({"data_dir": str(data)}))
    writer = ItemWriter(data / "items")
    t0 = time.perf_counter()
    size = writer.write(n_items, per_file)
    print(f"wrote {n_items:,} items in {writer.files:,} files ({size / 1e6:.0f} MB) in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    catalog = [sys.executable, "-m", "runner", "catalog", "--config", str(config)]
    baseline = measure([sys.executable, "-c", PARSE_ONLY, str(data / "items")], REPO_ROOT)
    print(f"baseline (read + json.loads): {baseline['wall_s']} s, "
          f"{baseline['peak_rss_mb']} MB", flush=True)
    build = measure(catalog, REPO_ROOT)
    print(f"catalog build: {build['wall_s']} s, {build['peak_rss_mb']} MB: {build['stdout']}",
          flush=True)
    noop = measure(catalog, REPO_ROOT)
    files_before = writer.files
    writer.write(round_items, per_file)
    incremental = measure(catalog, REPO_ROOT)
    print(f"one more round ({round_items} items, {writer.files - files_before} files): "
          f"{incremental['wall_s']} s, {incremental['peak_rss_mb']} MB", flush=True)
    import sqlite3

    conn = sqlite3.connect(data / "catalog.sqlite")
    counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("trending_observations", "trending_history", "repos", "repo_stars",
                        "docs_pages", "docs_versions")}
    conn.close()
    return {
        "items": n_items, "files": files_before, "item_bytes": size,
        "catalog_bytes": (data / "catalog.sqlite").stat().st_size, "tables": counts,
        "baseline_parse_only": baseline, "build": build, "noop_rerun": noop,
        "incremental": {**incremental, "items": round_items},
        "items_per_s": round(n_items / build["wall_s"]),
        "baseline_items_per_s": round(n_items / baseline["wall_s"]),
        "build_vs_parse_only": round(build["wall_s"] / baseline["wall_s"], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.catalog", description=__doc__)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--per-file", type=int, default=1000)
    parser.add_argument("--round-items", type=int, default=600,
                        help="items in the 'one more round' (a round of a few workers)")
    parser.add_argument("--out", metavar="PATH",
                        help="results JSON (default benchmarks/results/catalog.json, or "
                             "catalog-N.json for another --items)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-catalog-") as tmp:
        result = run(args.items, args.per_file, args.round_items, Path(tmp))
    result = {"machine": machine_info(), "command": " ".join(sys.argv), **result}
    print(f"\n{result['items']:,} items -> {result['items_per_s']:,} items/s "
          f"({result['build_vs_parse_only']}x the parse-only baseline's time), peak RSS "
          f"{result['build']['peak_rss_mb']} MB; incremental round "
          f"{result['incremental']['wall_s']} s; catalog "
          f"{result['catalog_bytes'] / 1e6:.0f} MB; tables {result['tables']}")
    name = "catalog.json" if args.items == 1_000_000 else f"catalog-{args.items}.json"
    out = Path(args.out) if args.out else RESULTS_DIR / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
