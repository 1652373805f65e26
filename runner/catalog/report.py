"""``python -m runner report --out DIR``: PNG plots and an ``index.html`` that shows them.

* ``items_per_hour.png`` — items collected per hour, one line per spider;
* ``data_size.png`` — the item files' bytes (cumulative, by collection hour) and the data
  directory's size at each catalog build;
* ``github_budget.png`` — the share of each GitHub budget in use at each catalog build (the
  budget store keeps only the current window, so the catalog samples it when it builds);
* ``top_risers.png`` — star curves of the repositories that gained most stars over the last
  7 days of trending observations.

matplotlib is the ``report`` extra; a plot with no data says so in the image.
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import os
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from runner.catalog import queries
from runner.catalog.access import open_fresh, read_into
from runner.catalog.schema import DATA_TABLES
from runner.catalog.timeaxis import apply_time_axis
from runner.core.usage import PROG as RUNNER
from runner.core.usage import USAGE_ERROR
from scraper.config.collector import CollectorConfig
from scraper.utils.layout import DataLayout

PROG = f"{RUNNER} report"
TOP_RISERS = 8
PLOTS = ("items_per_hour", "data_size", "github_budget", "top_risers")


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = "Write PNG plots of the catalog and an index.html to DIR."
    add_config_option(parser)
    parser.add_argument("--out", required=True, metavar="DIR")
    parser.set_defaults(handler=cmd_report)


def cmd_report(args: argparse.Namespace, config: CollectorConfig) -> int:
    if importlib.util.find_spec("matplotlib") is None:
        print(f"{PROG}: matplotlib is not installed: pip install -e '.[report]'",
              file=sys.stderr)
        return USAGE_ERROR

    def work(conn: Any, out: Path) -> None:
        index = write_report(conn, out)
        print(f"report: {len(PLOTS)} plots and {index}")

    return read_into(DataLayout(config.data_dir), Path(args.out), PROG, work)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def write_report(conn: Any, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a server
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    def figure(name: str, title: str, ylabel: str, draw: Callable[[Any], bool],
               empty: str = "no data yet") -> None:
        fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100)
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        if draw(ax):
            ax.legend(loc="best", fontsize="small")
            apply_time_axis(ax)
        else:
            ax.text(0.5, 0.5, empty, ha="center", va="center",
                    transform=ax.transAxes)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        tmp = out / f".{name}.png.tmp"
        with open_fresh(tmp, "wb") as handle:
            fig.savefig(handle, format="png")
        plt.close(fig)
        os.replace(tmp, out / f"{name}.png")

    def items(ax: Any) -> bool:
        series: dict[str, tuple[list[datetime], list[int]]] = {}
        for spider, hour, n in conn.execute(
                "SELECT spider, hour, items FROM items_per_hour ORDER BY spider, hour"):
            xs, ys = series.setdefault(spider, ([], []))
            xs.append(_time(hour))
            ys.append(n)
        for spider, (xs, ys) in series.items():
            ax.plot(xs, ys, marker=".", label=literal(spider))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # items come whole
        return bool(series)

    def size(ax: Any) -> bool:
        xs, ys, total = [], [], 0
        for hour, size_bytes in conn.execute(
                "SELECT hour, sum(bytes) FROM items_per_hour GROUP BY hour ORDER BY hour"):
            total += size_bytes
            xs.append(_time(hour))
            ys.append(total / 1e6)
        if xs:
            ax.plot(xs, ys, label="item files (cumulative)")
        samples = conn.execute("SELECT measured_at, data_bytes FROM size_samples "
                               "ORDER BY measured_at").fetchall()
        if samples:
            ax.plot([_time(t) for t, _ in samples], [b / 1e6 for _, b in samples],
                    marker="o", label="data_dir on disk")
        return bool(xs or samples)

    def budget(ax: Any) -> bool:
        series: dict[str, tuple[list[datetime], list[float]]] = {}
        for at, resource, identity, limit, remaining in conn.execute(
                "SELECT measured_at, resource, identity, limit_n, remaining "
                "FROM budget_samples WHERE limit_n > 0 ORDER BY measured_at"):
            xs, ys = series.setdefault(f"{resource} ({identity})", ([], []))
            xs.append(_time(at))
            ys.append(100.0 * (limit - remaining) / limit)
        for label, (xs, ys) in series.items():
            ax.plot(xs, ys, marker="o", label=literal(label))
        ax.set_ylim(0, 105)  # a share of the window: its whole range, whatever was used
        return bool(series)

    risers = conn.execute(queries.RISERS, {"limit": TOP_RISERS}).fetchall()

    def rising(ax: Any) -> bool:
        for full_name, *_ in risers:
            curve = conn.execute(queries.STAR_CURVE, {"full_name": full_name}).fetchall()
            base = curve[0][1] if curve else 0
            ax.plot([_time(t) for t, _ in curve], [s - base for _, s in curve], marker=".",
                    label=literal(full_name))
        return bool(risers)

    figure("items_per_hour", "Items collected per hour", "items", items)
    figure("data_size", "Data size over time", "MB", size)
    figure("github_budget", "GitHub budget in use at each catalog build", "% of the window",
           budget)
    figure("top_risers", "Top risers: stars gained over the last 7 days on trending",
           "stars gained", rising,
           empty="no repository has gained stars on trending yet" if conn.execute(
               "SELECT 1 FROM trending_fetches LIMIT 1").fetchone() else "no data yet")
    return _write_index(conn, out, risers)


def _write_index(conn: Any, out: Path, risers: list[tuple[Any, ...]]) -> Path:
    counts = [(table, conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
              for table in DATA_TABLES]
    esc = html.escape
    rows = "\n".join(
        f"<tr><td>{esc(name)}</td><td>{gained:,}</td><td>{start:,}</td><td>{end:,}</td>"
        f"<td>{best}</td></tr>" for name, gained, start, end, _, best in risers)
    tables = "\n".join(f"<tr><td>{esc(t)}</td><td>{n:,}</td></tr>" for t, n in counts)
    images = "\n".join(f'<h2>{esc(name.replace("_", " "))}</h2><img src="{name}.png" '
                       f'alt="{esc(name)}">' for name in PLOTS)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>hubcollect report</title>
<style>body{{font-family:sans-serif;max-width:960px;margin:auto}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 8px}}
img{{max-width:100%}}</style></head><body>
<h1>hubcollect report</h1>
<h2>Top risers, last 7 days</h2>
<table><tr><th>repository</th><th>stars gained</th><th>from</th><th>to</th>
<th>best rank</th></tr>
{rows}
</table>
<h2>Catalog</h2>
<table><tr><th>table</th><th>rows</th></tr>
{tables}
</table>
{images}
</body></html>
"""
    index = out / "index.html"
    tmp = out / ".index.html.tmp"
    with open_fresh(tmp, "w", encoding="utf-8") as handle:
        handle.write(page)
    os.replace(tmp, index)
    return index


def literal(text: str) -> str:
    """A name as matplotlib shows it, not as mathtext: ``$…$`` in a repository's name would
    otherwise be parsed (and a malformed one fails the whole report)."""
    return text.replace("$", r"\$")
