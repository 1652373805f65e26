"""Class paths that moved in 0.2, still read in ``collector.yaml`` ``settings:`` for a release.

A user who wrote ``BUDGET_STORAGE: scraper.stores.sqlite.budget.SqliteBudgetStorage`` (or a
pipeline or parser path) before the packages were regrouped by feature keeps a working config:
the reader replaces the old path with the new one and logs one deprecation line naming both.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

REMOVED_IN = "0.3"

MOVED_MODULES: dict[str, str] = {
    "pipelines.contenthash": "scraper.dedup.contenthash",
    "pipelines.fidelity": "pipelines.codefidelity",
    "scraper.contenthash": "scraper.dedup.contenthash",
    "scraper.spidermiddlewares.deltafetch": "scraper.dedup.deltafetch",
    "scraper.stores.sqlite.deltafetch": "scraper.dedup.sqliteurls",
    "scraper.stores.sqlite.contenthash": "scraper.dedup.sqlitehashes",
    "scraper.stores.sqlite.budget": "scraper.budget.sqlitebudget",
    "scraper.stores.sqlite.etags": "scraper.budget.sqliteetags",
    "scraper.stores.sqlite.sliceplans": "scraper.slicing.sqliteplans",
    "scraper.stores.redis.deltafetch": "scraper.dedup.redisurls",
    "scraper.stores.redis.contenthash": "scraper.dedup.redishashes",
    "scraper.stores.redis.budget": "scraper.budget.redisbudget",
    "scraper.stores.redis.etags": "scraper.budget.redisetags",
    "scraper.stores.redis.sliceplans": "scraper.slicing.redisplans",
    "scraper.stores.archive": "scraper.trending.archive",
    "scraper.downloadermiddlewares.budget": "scraper.budget.middleware",
    "scraper.downloadermiddlewares.conditional": "scraper.budget.conditional",
    "scraper.parsers.trending": "scraper.trending.repositories",
    "scraper.parsers.developers": "scraper.trending.developers",
    "scraper.distributed.worker": "scraper.cluster.heartbeat",
    "scraper.distributed.search": "scraper.cluster.searchspider",
    "scraper.distributed": "scraper.cluster",
    "scraper.feedfilter": "scraper.extensions.feedfilter",
}
"""Old module → new module; the name inside stays (the longest old prefix wins)."""

MOVED_NAMES: dict[str, str] = {
    "scraper.contenthash.ContentHashDedup": "scraper.dedup.contenthash.ContentHashPipeline",
    "scraper.stores.archive.PageArchive": "scraper.trending.archive.PageArchiveStorage",
    "scraper.stores.memory.MemoryDeltaFetchStorage":
        "scraper.dedup.memorydedup.MemoryDeltaFetchStorage",
    "scraper.stores.memory.MemoryContentHashStorage":
        "scraper.dedup.memorydedup.MemoryContentHashStorage",
    "scraper.stores.memory.MemoryEtagStorage": "scraper.budget.memorybudget.MemoryEtagStorage",
    "scraper.stores.memory.MemoryBudgetStorage": "scraper.budget.memorybudget.MemoryBudgetStorage",
    "scraper.stores.memory.MemorySlicePlanStorage":
        "scraper.slicing.memoryplans.MemorySlicePlanStorage",
    "scraper.stores.memory.MemoryPageArchive": "scraper.trending.memoryarchive.MemoryPageArchive",
}
"""Whole paths whose object was renamed or moved out of a module that stayed."""


def moved_path(path: str) -> str | None:
    """The current class path for an old one, or None when ``path`` did not move."""
    if path in MOVED_NAMES:
        return MOVED_NAMES[path]
    module, _, name = path.rpartition(".")
    for old in sorted(MOVED_MODULES, key=len, reverse=True):
        if module == old or module.startswith(old + "."):
            return MOVED_MODULES[old] + module[len(old):] + "." + name
    return None


def update_moved(where: str, key: str, value: Any) -> Any:
    """``value`` (a class path, or a dict keyed by class paths such as ``ITEM_PIPELINES``) with
    each moved path replaced, one deprecation line per replacement."""
    if isinstance(value, str):
        new = moved_path(value)
        if new is None:
            return value
        _deprecated(f"{where}.{key}", value, new)
        return new
    if isinstance(value, dict):
        updated: dict[Any, Any] = {}
        for path, order in value.items():
            new = moved_path(path) if isinstance(path, str) else None
            if new is not None:
                _deprecated(f"{where}.{key}", path, new)
            updated[new or path] = order
        return updated
    return value


def _deprecated(field: str, old: str, new: str) -> None:
    logger.warning("%s: %s moved to %s; write the new path (the old one is read until %s)",
                   field, old, new, REMOVED_IN)
