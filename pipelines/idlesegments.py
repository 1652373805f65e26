"""Closing an open segment no process is writing: a shard that no longer runs leaves none open.

A spider-shard's segment is closed by its own next round. A shard that runs no more rounds (the
plan changed at a ``reload``, a ``scrapy crawl docs -a shard=0/4`` by hand, a stopped runner)
would leave its ``.part`` open forever; here another process closes it, but only while holding
that shard's worker lock (``state/locks/{spider}-{i}of{N}.lock``, held by every ``scrapy crawl``
for its whole run): a segment a live worker or hand-run crawl appends to is never touched.
The close is the one the shard's own start does: a torn tail cut, then renamed (or gzipped).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pipelines.segmentpointer import SegmentPointer
from pipelines.segments import (
    PART_SUFFIX,
    SegmentPolicy,
    close_segment,
    recover_part,
    remove_stale_compression,
    shard_slug,
)
from scraper import settings as defaults
from scraper.utils.layout import DataLayout
from scraper.utils.pidlock import exclusive_or_skip

logger = logging.getLogger(__name__)


def segment_policy(overrides: Mapping[str, Any]) -> SegmentPolicy:
    """The segment policy a spider's workers run with, given its ``spiders.<name>.settings``
    (values the config checked already, by the rules of :mod:`scraper.config.settingrules`).
    Read without Scrapy's ``Settings``: the catalog build that calls this imports no Scrapy."""
    def value(name: str) -> Any:
        return overrides.get(name, getattr(defaults, name))

    return SegmentPolicy(float(value("ITEMSTORE_SEGMENT_SECONDS")),
                         int(value("ITEMSTORE_SEGMENT_BYTES")),
                         str(value("ITEMSTORE_COMPRESS") or ""))


def close_if_idle(layout: DataLayout, part: Path, policy: SegmentPolicy, *,
                  due_only: bool, now: float) -> Path | None:
    """Close the open segment ``part`` if no process holds its shard (and, ``due_only``, its
    time or size boundary is past and nothing was written to it for a whole segment period:
    a shard still planned writes every round, and its own next round closes it, so a build
    seldom holds the lock of a shard about to start); the file that now holds its lines
    (closed), or None when it stays open or is gone."""
    slug = shard_slug(part)
    if slug is None or not part.name.endswith(PART_SUFFIX):
        return None
    with exclusive_or_skip(layout.state_dir / "locks" / f"{slug}.lock") as mine:
        if not mine:
            return None  # a worker or a hand-run crawl appends to it
        try:
            info = part.stat()
        except FileNotFoundError:  # closed by its shard meanwhile
            return None
        if due_only and (not policy.is_due(part, info.st_size, now)
                         or now - info.st_mtime < policy.seconds):
            return None
        remove_stale_compression(part)
        if recover_part(part) is None:
            return None
        final = close_segment(part, policy.compress)
        logger.info("closed segment %s (no process writes it)", final.name)
        return final


def open_segments(layout: DataLayout) -> Iterator[tuple[str, Path]]:
    """(spider, ``.part``) for every segment a spider-shard's pointer names that is still
    open, from ``state/segments/`` alone: ``items/`` (a year of segments) is never listed."""
    pointers = layout.state_dir / "segments"
    if not pointers.is_dir():
        return
    for pointer in sorted(pointers.glob("*.open")):
        name = SegmentPointer(pointer, pointer.stem).read()
        spider = pointer.stem.rpartition("-")[0]
        if name is None or not spider:
            continue
        part = layout.items_dir(spider) / name
        if part.exists():
            yield spider, part


def close_idle_segments(layout: DataLayout, spider_settings: Mapping[str, Mapping[str, Any]],
                        *, keep: frozenset[str] = frozenset(), now: float) -> list[Path]:
    """Close every open segment whose shard no process holds, except the shards in ``keep``
    (slugs a runner is about to run: their own next round closes theirs when due); the
    segments closed. ``spider_settings``: each spider's settings overrides by name."""
    closed = []
    for spider, part in open_segments(layout):
        if shard_slug(part) in keep:
            continue
        policy = segment_policy(spider_settings.get(spider, {}))
        try:
            final = close_if_idle(layout, part, policy, due_only=False, now=now)
        except OSError as exc:  # no room to compress it: it stays open, whole
            logger.warning("segment %s stays open: %s", part.name, exc.strerror)
            continue
        if final is not None:
            closed.append(final)
    return closed
