"""The time axis of the report's plots: right on the first hour of data and on a year.

Left to itself matplotlib widens one point to years and labels seconds as
``29:49.000000``; here the axis spans the data (at least :data:`MIN_SPAN`, centred on a
lone point) and its labels are matplotlib's concise ones (hours within a day, days within a
month, months within a year).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

MIN_SPAN = timedelta(hours=2)
"""The narrowest axis: a first round's point sits in the middle of two hours."""

MARGIN = 0.02
"""Room left at each end of a wider axis, as a share of its span."""


def time_limits(times: Iterable[datetime]) -> tuple[datetime, datetime] | None:
    """The axis range for data at ``times``; None when there is none."""
    ordered = sorted(times)
    if not ordered:
        return None
    first, last = ordered[0], ordered[-1]
    span = last - first
    if span < MIN_SPAN:
        middle = first + span / 2
        return middle - MIN_SPAN / 2, middle + MIN_SPAN / 2
    return first - span * MARGIN, last + span * MARGIN


def apply_time_axis(ax: Any) -> None:
    """Bound ``ax``'s x axis to its lines' times and label it concisely."""
    import matplotlib.dates as mdates

    limits = time_limits(x for line in ax.get_lines() for x in line.get_xdata())
    if limits is None:
        return
    locator = mdates.AutoDateLocator(minticks=3, maxticks=8)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_xlim(*limits)
