"""CPU of the data dir's size at a year of segments: the walk ``status``, ``metrics`` and the
size sample made, against the sizes kept as segments close (:mod:`scraper.utils.itemsizes`).

    python -m benchmarks.datasize [--days 365] [--repeat 3]

Makes ``--days`` days of closed segments at the defaults' rate (:data:`PER_HOUR` files an
hour: 6 trending shards, 4 search, 12 docs: about 530 a day, as issue 38 counted), empty (a
walk's cost is one ``lstat`` per file, whatever its size), one open segment per shard with its
pointer, then measures in this process, median CPU of ``--repeat`` runs:

* ``walk``: :func:`~scraper.utils.diskspace.data_size` of the data dir (before);
* ``kept sizes``: :func:`~runner.core.datasize.data_bytes` (after; the records in place);
* ``status`` and ``metrics`` (``collect_status``, ``render_metrics``), before (with the walk's
  figure, as they made it) and after;
* ``size sample``: ``growth.record_sample`` as the runner takes it every 10 minutes (after);
* ``first count``: the one listing of ``items/`` a data dir without records costs (once).

Results: ``benchmarks/results/datasize.json``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS_DIR, describe_machine, format_table, machine_info, publish
from runner.core import datasize, growth
from runner.status.metrics import render_metrics
from runner.status.render import collect_status
from scraper.config.collector import CollectorConfig
from scraper.utils.diskspace import data_size
from scraper.utils.layout import DataLayout

PER_HOUR = {"trending": 6, "search": 4, "docs": 12}
"""Closed segments an hour per spider: one per shard (the defaults at 20 workers)."""
END = 1_830_297_600  # 2028-01-01T00:00:00Z


def make_data_dir(root: Path, days: int) -> DataLayout:
    layout = DataLayout(root)
    pointers = layout.state_dir / "segments"
    pointers.mkdir(parents=True)
    for spider, shards in PER_HOUR.items():
        directory = layout.items_dir(spider)
        directory.mkdir(parents=True)
        for hour in range(days * 24):
            stamp = time.strftime("%Y%m%dT%H0000Z", time.gmtime(END - (hour + 1) * 3600))
            for i in range(shards):
                (directory / f"{spider}-{i}of{shards}-{stamp}.jsonl").touch()
        stamp = time.strftime("%Y%m%dT%H0000Z", time.gmtime(END))
        for i in range(shards):
            name = f"{spider}-{i}of{shards}-{stamp}.jsonl.part"
            (directory / name).write_text('{"open": 1}\n')
            (pointers / f"{spider}-{i}of{shards}.open").write_text(name + "\n")
    return layout


def cpu(call: Callable[[], Any], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        started = time.process_time()
        call()
        runs.append(time.process_time() - started)
    return statistics.median(runs)


def run(days: int, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hubcollect-datasize-") as work:
        layout = make_data_dir(Path(work) / "data", days)
        config = CollectorConfig(data_dir=layout.root)
        files = sum(len(list(layout.items_dir(s).iterdir())) for s in PER_HOUR)
        first = cpu(lambda: datasize.data_bytes(layout), 1)  # no records yet: one count
        walked, kept = data_size(layout.root), datasize.data_bytes(layout)
        if walked != kept:
            raise SystemExit(f"the kept sizes say {kept:,} bytes, the walk {walked:,}")

        collect_status(layout, config=config, cluster=False)  # its imports, once, unmeasured

        def sample() -> None:
            growth.growth_file(layout).unlink(missing_ok=True)
            growth.record_sample(layout)

        rows = [
            ("walk (before)", cpu(lambda: data_size(layout.root), repeat)),
            ("kept sizes (after)", cpu(lambda: datasize.data_bytes(layout), repeat)),
            ("status (before)", cpu(lambda: collect_status(
                layout, config=config, cluster=False, data_bytes=data_size(layout.root)),
                repeat)),
            ("status (after)", cpu(lambda: collect_status(layout, config=config, cluster=False),
                                   repeat)),
            ("metrics (before)", cpu(lambda: render_metrics(collect_status(
                layout, config=config, cluster=False, data_bytes=data_size(layout.root))),
                repeat)),
            ("metrics (after)", cpu(lambda: render_metrics(collect_status(
                layout, config=config, cluster=False)), repeat)),
            ("size sample (after)", cpu(sample, repeat)),
            ("first count (once)", first),
        ]
    walk = rows[0][1]
    return {"benchmark": "datasize", "days": days, "item_files": files, "repeat": repeat,
            "machine": machine_info(),
            "rows": [{"what": what, "cpu_ms": round(seconds * 1000, 1),
                      "x_walk": round(seconds / walk, 3) if walk else None}
                     for what, seconds in rows]}


def render(results: dict[str, Any]) -> str:
    table = format_table(["what", "CPU ms (median)", "× walk"],
                         [[r["what"], f"{r['cpu_ms']:.1f}", r["x_walk"]]
                          for r in results["rows"]])
    return (f"{describe_machine(results['machine'])}; {results['days']} days, "
            f"{results['item_files']:,} item files; median of {results['repeat']}\n{table}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.datasize",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=365, help="days of segments")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measure")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "datasize.json")
    args = parser.parse_args(argv)
    return publish(args.out, run(args.days, args.repeat), render)


if __name__ == "__main__":
    raise SystemExit(main())
