"""The throughput plot: pages/s and tree PSS (MB) against workers, a line per contender family.

One row of panels per workload. The runner and the predecessor are lines over their worker
counts; the single-process contenders (``scrapy crawl docs``, plain Scrapy, Crawlee) are points
at one worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

STYLES = {
    "runner": ("this runner (autoscaled)", "o-", "tab:blue"),
    "runner-all": ("this runner, all workers at once", "x", "tab:cyan"),
    "predecessor": ("predecessor (requests)", "s--", "tab:red"),
    "scrapy-crawl": ("scrapy crawl docs (1 process)", "D", "tab:green"),
    "plain-scrapy": ("plain Scrapy (1 process)", "^", "tab:purple"),
    "crawlee": ("Crawlee ParselCrawler (1 process)", "v", "tab:orange"),
}
METRICS = (("pages_per_s", "pages/s"), ("peak_pss_mb", "peak tree PSS (MB)"))


def plot_throughput(results: dict[str, Any], path: Path) -> str | None:
    """Write the PNG; returns why not when it cannot (matplotlib missing, nothing measured)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib)"
    workloads = {name: w for name, w in results["workloads"].items() if w.get("rows")}
    if not workloads:
        return "no workload was measured"
    fig, axes = plt.subplots(len(workloads), len(METRICS), squeeze=False,
                             figsize=(11, 4.2 * len(workloads)))
    for row, workload in enumerate(workloads.values()):
        for col, (metric, label) in enumerate(METRICS):
            ax = axes[row][col]
            for family, (legend, style, color) in STYLES.items():
                points = sorted((r["workers"], r[metric]) for r in workload["rows"]
                                if r["family"] == family and r.get(metric) is not None)
                if points:
                    xs, ys = zip(*points, strict=True)
                    ax.plot(xs, ys, style, color=color, label=legend)
            ax.set_xscale("log", base=2)
            ticks = sorted({r["workers"] for r in workload["rows"]})
            ax.set_xticks(ticks, [str(t) for t in ticks])
            ax.set_xlabel("workers (processes)")
            ax.set_ylabel(label)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.set_title(f"{workload['title']}\n{label}", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8,
               frameon=False)
    machine = results["machine"]
    fig.suptitle(f"hubcollect throughput — {results['sites']} sites × {results['pages']} pages, "
                 f"{machine['nproc']} CPU, Python {machine['python']}, "
                 f"Scrapy {machine['scrapy']}", fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
