"""``data_dir``'s size on disk, as ``status``, ``metrics`` and the size sample show it, without
walking ``items/``.

As :func:`~scraper.utils.diskspace.data_size` counts it (allocated blocks, as ``du``), from
three parts: the closed segments' sizes kept as they close (:mod:`scraper.utils.itemsizes`),
the open segments where their spider-shards' pointers name them (``state/segments/``), and a
walk of everything else (stores, logs, the archive, the catalog: a few hundred files, not the
190,000 segments of a year).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from pipelines.idlesegments import open_segments
from scraper.utils.itemsizes import blocks, closed_bytes
from scraper.utils.layout import DataLayout


def data_bytes(layout: DataLayout, *, recount_after: float | None = None) -> int:
    """Bytes on disk under ``data_dir``; ``recount_after``: count a spider's closed segments
    again when its record is older than that many seconds (the size sample's daily count)."""
    if not layout.root.is_dir():
        return 0
    spiders, total = [], 0
    with contextlib.suppress(FileNotFoundError), os.scandir(layout.items_root) as it:
        for entry in it:  # a spider's directory, or a file of its own (a few)
            if entry.is_dir(follow_symlinks=False):
                spiders.append(entry.name)
            else:
                total += blocks(Path(entry.path))
    now = time.time()
    # The records first: a count they make writes one, which the walk after it then sees.
    total += sum(closed_bytes(layout, spider, recount_after=recount_after, now=now)
                 for spider in spiders)
    for directory, dirs, files in os.walk(layout.root):
        if directory == str(layout.root):
            dirs[:] = [name for name in dirs if name != layout.items_root.name]
        for name in files:
            total += blocks(Path(directory, name))
    return total + sum(blocks(part) for _, part in open_segments(layout))
