"""How fast ``data_dir`` grows and how many days its disk has left.

The runner samples the data dir's size at most every :data:`SAMPLE_EVERY` seconds into
``state/growth.json`` (closed segments from their sizes kept as they close, no walk of
``items/``: :mod:`scraper.utils.itemsizes`; counted again once a day); growth
per day is the slope from the oldest sample of the last :data:`WINDOW` to now, so one burst
(a first docs crawl) fades out of it within a week. ``status``, the watchdog and the metrics
read it; none of them walks ``items/``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from runner.core import datasize
from scraper.utils.diskspace import free_bytes
from scraper.utils.itemsizes import RECOUNT_EVERY
from scraper.utils.layout import DataLayout
from scraper.utils.statefile import read_json, write_json_atomic

SAMPLE_EVERY = 600.0
WINDOW = 7 * 86400.0
MIN_SPAN = 3600.0
"""No growth figure from less than an hour of samples: a round's burst is not a trend."""
DAY = 86400.0


@dataclass(frozen=True, slots=True)
class DiskOutlook:
    data_bytes: int
    free_bytes: int | None
    per_day: float | None
    """Bytes the data dir grew per day over the window; None until an hour is sampled."""

    @property
    def days_left(self) -> float | None:
        """Days until the disk is full at this growth; None when it is not growing."""
        if self.per_day is None or self.per_day <= 0 or self.free_bytes is None:
            return None
        return self.free_bytes / self.per_day


def growth_file(layout: DataLayout) -> Path:
    return layout.state_dir / "growth.json"


def read_samples(layout: DataLayout) -> list[tuple[float, int]]:
    data = read_json(growth_file(layout))
    samples = data.get("samples") if isinstance(data, dict) else None
    if not isinstance(samples, list):
        return []
    return [(float(t), int(s)) for t, s in
            (pair for pair in samples if isinstance(pair, list) and len(pair) == 2)
            if isinstance(t, int | float) and isinstance(s, int)]


def record_sample(layout: DataLayout, now: float | None = None) -> bool:
    """Add the data dir's size now, unless the last sample is younger than SAMPLE_EVERY."""
    now = time.time() if now is None else now
    samples = read_samples(layout)
    if samples and 0 <= now - samples[-1][0] < SAMPLE_EVERY:
        return False
    samples = [s for s in samples if now - WINDOW <= s[0] <= now]
    samples.append((now, datasize.data_bytes(layout, recount_after=RECOUNT_EVERY)))
    write_json_atomic(growth_file(layout), {"samples": [list(s) for s in samples]})
    return True


def free_space(path: Path) -> int | None:
    try:
        return free_bytes(path)
    except OSError:
        return None


def outlook(layout: DataLayout, data_bytes: int | None = None,
            now: float | None = None) -> DiskOutlook:
    now = time.time() if now is None else now
    size = datasize.data_bytes(layout) if data_bytes is None else data_bytes
    window = [s for s in read_samples(layout) if now - WINDOW <= s[0] <= now]
    per_day = None
    if window and now - window[0][0] >= MIN_SPAN:
        per_day = (size - window[0][1]) / (now - window[0][0]) * DAY
    return DiskOutlook(size, free_space(layout.root), per_day)
