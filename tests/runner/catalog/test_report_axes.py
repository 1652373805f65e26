"""The report looks right on the first hour of data and on a year: the time axis spans the
data (never years for one point), its labels are dates and clock times (never
``29:49.000000``), and a "top riser" gained stars."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runner.catalog import queries
from runner.catalog.schema import connect
from runner.catalog.timeaxis import MIN_SPAN, time_limits
from tests.support.collector import in_child
from tests.support.reportdata import write_catalog

T0 = datetime(2027, 1, 1, tzinfo=UTC)

# In a child: matplotlib in this process would grow every crawl a later test starts.
TICK_LABELS = """
import json, sys
from pathlib import Path
import matplotlib
matplotlib.use("Agg")
from runner.catalog import report
from runner.catalog.schema import connect
labels = {}
import matplotlib.pyplot as plt
original = plt.close
def keep(fig):
    ax = fig.axes[0]
    fig.canvas.draw()
    labels[ax.get_title()] = {"x": [t.get_text() for t in ax.get_xticklabels()],
                              "y": [t.get_text() for t in ax.get_yticklabels()],
                              "xlim": [float(v) for v in ax.get_xlim()],
                              "ylim": [float(v) for v in ax.get_ylim()],
                              "lines": [line.get_label() for line in ax.get_lines()]}
    original(fig)
plt.close = keep
out = Path(sys.argv[2])
out.mkdir()
report.write_report(connect(Path(sys.argv[1]), readonly=True), out)
print(json.dumps(labels))
"""


def test_one_point_gets_a_two_hour_axis_and_a_year_its_own_span() -> None:
    assert time_limits([]) is None
    assert time_limits([T0]) == (T0 - MIN_SPAN / 2, T0 + MIN_SPAN / 2)
    lo, hi = time_limits([T0 + timedelta(hours=h) for h in range(365 * 24)])
    year = timedelta(hours=365 * 24 - 1)
    assert lo < T0 and T0 + year < hi and hi - lo < year * 1.05


def test_risers_are_only_repositories_that_gained_stars(tmp_path: Path) -> None:
    write_catalog(tmp_path / "catalog.sqlite", 48)  # a/rising +1 a fetch, b/flat none
    conn = connect(tmp_path / "catalog.sqlite", readonly=True)
    risers = conn.execute(queries.RISERS, {"limit": 8}).fetchall()
    assert [(name, gained) for name, gained, *_ in risers] == [("a/rising", 47)]


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="report extra")
@pytest.mark.parametrize("hours", [1, 365 * 24])
def test_report_axes_at_the_first_hour_and_at_a_year(tmp_path: Path, hours: int) -> None:
    write_catalog(tmp_path / "catalog.sqlite", hours, step=1 if hours == 1 else 24)
    axes = in_child(TICK_LABELS, tmp_path / "catalog.sqlite", tmp_path / "out")
    budget = axes["GitHub budget in use at each catalog build"]
    items = axes["Items collected per hour"]
    for ax in (budget, items):
        days = ax["xlim"][1] - ax["xlim"][0]  # matplotlib's date unit: days
        assert (0.08 < days < 0.1) if hours == 1 else (364 < days < 384), ax
        assert all(len(label) <= 8 and "." not in label for label in ax["x"]), ax["x"]
    if hours == 1:
        assert any(":" in label for label in items["x"])  # clock times within the hour
        assert all("." not in label for label in items["y"]), items["y"]  # whole items
    else:
        assert "Mar" in items["x"] and "2027" in items["x"]  # months across the year
    assert budget["ylim"] == [0, 105] and "100" in budget["y"]  # the window's whole share
    risers = axes["Top risers: stars gained over the last 7 days on trending"]
    assert risers["lines"] == ([] if hours == 1 else ["a/rising"])  # b/flat gained nothing
