"""``python -m benchmarks.catalogio``: what a catalog build writes to disk, against what it keeps.

Generates ``--days`` of item segments at the defaults (:mod:`benchmarks.segmenthistory`: trending
snapshots, search and docs items in hourly segments) and measures, each as a child
``python -m runner catalog``:

* **first build**: the whole history into a new catalog;
* **catch-up**: a catalog built over the first ``--catch-up-from`` days (hard links of those
  segments in a second data dir), then the rest of the history at once;
* **incremental**: one more round (an hour of segments) into the caught-up catalog.

For each: ``write_bytes`` (``/proc/self/io`` of this process, which the kernel adds each reaped
child's to: what the build made the kernel write, WAL, checkpoints and temporary files
included) over the catalog's final size, CPU seconds and wall time. Then every Datasette page
of the caught-up catalog (each table's and view's page, a row page of each table, each canned
query) is timed through a real ``datasette serve`` with the viewer's metadata.

``--baseline REV`` runs the same first build and catch-up with the catalog code of that git
revision (``git archive`` of ``runner/`` and ``scraper/`` into a temporary directory) on the same
items, in the same run.

    nice python -m benchmarks.catalogio --days 30 --catch-up-from 8 --baseline dfcdfdb
    nice python -m benchmarks.catalogio                    # a year (~ 10 min of CPU)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import REPO_ROOT, RESULTS_DIR, machine_info, source_tree
from benchmarks.segmenthistory import START, History

SEARCH_PER_HOUR = 400
"""Search results collected an hour (``benchmarks.history``'s ``--search-per-hour``)."""
PAGE_TIMEOUT = 60.0


def io_counters() -> dict[str, int]:
    """This process's ``/proc/self/io``, reaped children included."""
    with open("/proc/self/io", encoding="ascii") as handle:
        return {name: int(value) for name, value
                in (line.split(": ") for line in handle.read().splitlines())}


def write_bytes() -> int:
    """What was handed to the disk to write: ``write_bytes``, temporary files deleted before
    they reached it (``cancelled_write_bytes``) not taken off."""
    return io_counters()["write_bytes"]


def catalog_bytes(data: Path) -> int:
    return sum(p.stat().st_size for p in data.glob("catalog.sqlite*") if p.is_file())


def build(data: Path, code: Path) -> dict[str, Any]:
    """``python -m runner catalog`` on ``data`` with the code under ``code``, measured."""
    config = data.parent / "collector.yaml"
    if not config.exists():
        config.write_text(yaml.safe_dump({"data_dir": str(data)}))
    before = write_bytes()
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "runner", "catalog", "--config", str(config)],
                            cwd=code, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(code)})
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    out, err = proc.communicate()
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"catalog build in {data}: {err[-2000:]}")
    written = write_bytes() - before
    size = catalog_bytes(data)
    return {"write_bytes": written, "catalog_bytes": size,
            "write_ratio": round(written / max(size, 1), 2),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "wall_s": round(wall, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024), "stdout": out.strip()}


def link_items(source: Path, target: Path, before: str | None) -> int:
    """Hard links of ``source``'s segments (those stamped before ``before``) under ``target``."""
    n = 0
    for path in sorted(source.rglob("*.jsonl")):
        if before is not None and path.stem.rsplit("-", 1)[-1] >= before:
            continue
        dest = target / path.relative_to(source)
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.link(path, dest)
            n += 1
    return n


def old_code(rev: str, where: Path) -> Path:
    """``runner/`` and ``scraper/`` of git revision ``rev``, extracted under ``where``."""
    return source_tree(rev, ("runner", "scraper"), where)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=PAGE_TIMEOUT) as answer:
        answer.read()
    return time.perf_counter() - started


def page_urls(db: Path) -> dict[str, str]:
    """Every Datasette page of the catalog: tables and views, a row page of each table with a
    key (as that catalog keys it), each canned query with the parameters a visitor would give
    it."""
    import sqlite3

    from datasette.utils import tilde_encode

    from runner.catalog.viewer import metadata

    conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
    base = "/catalog"
    pages = {}
    try:
        for name, kind in conn.execute("SELECT name, type FROM sqlite_master WHERE type IN "
                                       "('table', 'view') AND name NOT LIKE 'sqlite_%' "
                                       "ORDER BY name").fetchall():
            pages[f"{kind} {name}"] = f"{base}/{name}"
            key = [column for _, column in sorted(
                (pk, column) for _, column, _, _, _, pk
                in conn.execute(f'PRAGMA table_info("{name}")') if pk)]
            if kind == "table" and key:
                row = conn.execute(f'SELECT {", ".join(key)} FROM "{name}" '
                                   "LIMIT 1 OFFSET 100").fetchone() or conn.execute(
                    f'SELECT {", ".join(key)} FROM "{name}" LIMIT 1').fetchone()
                if row is not None:
                    ids = ",".join(tilde_encode(str(v)) for v in row)
                    pages[f"row {name}"] = f"{base}/{name}/{ids}"
        busiest = conn.execute("SELECT full_name FROM trending_history "
                               "ORDER BY observations DESC LIMIT 1").fetchone()
        login = conn.execute("SELECT login FROM trending_developer_history LIMIT 1").fetchone()
    finally:
        conn.close()
    params = {"when_was_it_trending": {"full_name": busiest[0] if busiest else "a/b"},
              "when_was_a_developer_trending": {"login": login[0] if login else "a"}}
    for name in metadata()["databases"]["catalog"]["queries"]:
        query = urllib.parse.urlencode(params.get(name, {}))
        pages[f"query {name}"] = f"{base}/{name}" + (f"?{query}" if query else "")
    return pages


def datasette_times(db: Path, code: Path, workdir: Path) -> dict[str, Any]:
    """Each page's first answer and its best of two more, through ``datasette serve``."""
    meta = workdir / "catalog-metadata.json"
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; from "
                    "runner.catalog.viewer import write_metadata; "
                    "write_metadata(Path(sys.argv[1]), 'catalog')", str(meta)],
                   cwd=code, env={**os.environ, "PYTHONPATH": str(code)}, check=True)
    port = _free_port()
    argv = subprocess.run(
        [sys.executable, "-c", "import sys, json; from pathlib import Path; "
         "from runner.catalog import viewer; argv = getattr(viewer, 'datasette_argv', None); "
         "print(json.dumps(argv(Path(sys.argv[1]), Path(sys.argv[2]), '127.0.0.1', "
         "int(sys.argv[3])) if argv else [sys.executable, '-m', 'datasette', 'serve', "
         "sys.argv[1], '--metadata', sys.argv[2], '--port', sys.argv[3]]))",
         str(db), str(meta), str(port)], cwd=code, env={**os.environ, "PYTHONPATH": str(code)},
        check=True, capture_output=True, text=True).stdout
    server = subprocess.Popen(json.loads(argv), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                _get(root + "/-/versions.json")
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("datasette did not start") from None
                time.sleep(0.2)
        times = {}
        for name, path in page_urls(db).items():
            first = _get(root + path)
            times[name] = {"first_s": round(first, 3),
                           "best_s": round(min(_get(root + path) for _ in range(2)), 3)}
    finally:
        server.terminate()
        server.wait(timeout=30)
    slowest = max(times, key=lambda n: times[n]["first_s"])
    return {"pages": times, "slowest": slowest, "slowest_first_s": times[slowest]["first_s"]}


def run(days: int, catch_from: int, baseline: str | None, workdir: Path) -> dict[str, Any]:
    items = workdir / "items"
    history = History(items, SEARCH_PER_HOUR)
    started = time.perf_counter()
    for _ in range(days * 24):
        history.hour()
    total = sum(history.bytes.values())
    print(f"generated {days} days: {total / 1e6:,.0f} MB of items in "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    split = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(START + catch_from * 86400))
    codes = {"new": REPO_ROOT}
    if baseline:
        codes["old"] = old_code(baseline, workdir / "old-code")
    result: dict[str, Any] = {"days": days, "catch_up_from_day": catch_from,
                              "item_bytes": total, "baseline_rev": baseline}
    for label, code in codes.items():
        first = workdir / label / "first" / "data"
        link_items(items, first / "items", None)
        steps = {"first_build": build(first, code)}
        print(f"{label} first build: {json.dumps(steps['first_build'])}", flush=True)
        shutil.rmtree(first.parent)  # the disk holds one year's catalog at a time
        caught = workdir / label / "catchup" / "data"
        link_items(items, caught / "items", split)
        steps["head_build"] = build(caught, code)
        link_items(items, caught / "items", None)
        steps["catch_up"] = build(caught, code)
        print(f"{label} catch-up: {json.dumps(steps['catch_up'])}", flush=True)
        round_items = History(caught / "items", SEARCH_PER_HOUR, seed=99)
        round_items.hours = days * 24
        round_items.hour()
        steps["incremental"] = build(caught, code)
        print(f"{label} incremental: {json.dumps(steps['incremental'])}", flush=True)
        if importlib.util.find_spec("datasette") is None:
            steps["datasette"] = {"skipped": "datasette is not installed: pip install -e "
                                             "'.[view]'"}
        else:
            steps["datasette"] = datasette_times(caught / "catalog.sqlite", code, caught)
            print(f"{label} datasette slowest: {steps['datasette']['slowest']} "
                  f"{steps['datasette']['slowest_first_s']} s", flush=True)
        result[label] = steps
        if label != "new":
            shutil.rmtree(workdir / label)
    return result


def report(result: dict[str, Any]) -> str:
    labels = [label for label in ("old", "new") if label in result]
    lines = [f"{result['days']} days, {result['item_bytes'] / 1e6:,.0f} MB of items; catch-up "
             f"from day {result['catch_up_from_day']}"]
    for step in ("first_build", "catch_up", "incremental"):
        for label in labels:
            r = result[label][step]
            lines.append(f"{step:<12} {label}: wrote {r['write_bytes'] / 1e6:>9,.0f} MB for a "
                         f"{r['catalog_bytes'] / 1e6:,.0f} MB catalog ({r['write_ratio']}×), "
                         f"{r['cpu_s']} CPU-s, {r['wall_s']} s wall, {r['peak_rss_mb']} MB")
    for label in labels:
        pages = result[label]["datasette"]
        if "skipped" in pages:
            lines.append(f"datasette {label}: skipped ({pages['skipped']})")
            continue
        lines.append(f"datasette {label}: {len(pages['pages'])} pages, slowest "
                     f"{pages['slowest']} {pages['slowest_first_s']} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.catalogio", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--catch-up-from", type=int, metavar="DAY",
                        help="the day the catch-up starts from (default: a quarter in, as the "
                             "issue's 268-day catch-up of a year)")
    parser.add_argument("--baseline", metavar="REV",
                        help="also measure the catalog code of this git revision, or of a "
                             "project directory")
    parser.add_argument("--out", type=Path, help="results JSON (default "
                        "benchmarks/results/catalogio.json, catalogio-Nd.json for other --days)")
    parser.add_argument("--workdir", type=Path, help="keep the data here (default: a "
                        "temporary directory)")
    args = parser.parse_args(argv)
    if args.days < 2:
        parser.error("--days must be at least 2")
    catch_from = args.catch_up_from if args.catch_up_from is not None else args.days * 97 // 365
    if not 0 < catch_from < args.days:
        parser.error("--catch-up-from must be after day 0 and before --days")
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=False)
        result = run(args.days, catch_from, args.baseline, args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-catalogio-") as tmp:
            result = run(args.days, catch_from, args.baseline, Path(tmp))
    result = {"machine": machine_info(), "command": " ".join(sys.argv), **result}
    print(report(result))
    name = "catalogio.json" if args.days == 365 else f"catalogio-{args.days}d.json"
    out = args.out or RESULTS_DIR / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
