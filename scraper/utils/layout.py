"""Where everything lives under ``data_dir``: every path the collector writes, in one place.

::

    {data_dir}/items/{spider}/{spider}-{i}of{N}-{stamp}.jsonl   the product (never pruned)
    {data_dir}/logs/{spider}-{i}of{N}.log                       one log per spider-shard, rotated
    {data_dir}/logs/runner.log                                  the runner's own log
    {data_dir}/state/deltafetch/{spider}.sqlite                 URL-level dedup, all shards
    {data_dir}/state/contenthash/{spider}.sqlite                content-level dedup, likewise
    {data_dir}/state/locks/{spider}-{i}of{N}.lock               one process per spider-shard
    {data_dir}/state/workers/{spider}-{i}of{N}.json             a worker's live stats
    {data_dir}/state/runner.pid, status.json, runner-command.json  the runner's
    {data_dir}/state/memory.json                                measured worker PSS (memory guard)
    {data_dir}/state/disk-reserve                               ballast freed when the disk fills
    {data_dir}/state/watchdog.lock, health.json, size_mark, size_mark.lock   the cron jobs'
    {data_dir}/state/distributed/{spider}-{i}of{N}.pending.jsonl  Redis writes kept over a restart
    {data_dir}/state/budget.sqlite                              the shared GitHub budget
    {data_dir}/state/etags.sqlite                               GitHub API pages' last ETags
    {data_dir}/state/search_slices.sqlite                       search queries' slice plans
    {data_dir}/state/ledger/{day}/{spider}-{i}of{N}.jsonl       the gap ledger: each scheduled
                                                                fetch of each round, its outcome
    {data_dir}/catalog.sqlite, catalog-metadata.json            the dataset, its viewer metadata
    {data_dir}/feeds/trending-{period}-{language or all}.atom   new arrivals on each list
    {data_dir}/archive/{spider}/{sha[:2]}/{sha256}.gz           archived pages, each body once
    {data_dir}/state/archive/{spider}.sqlite                    every fetch of an archived page
    {data_dir}/logs/catalog.log, state/catalog.lock             the catalog builds'
    {data_dir}/items/{spider}/{box}--{segment}.jsonl.gz         Redis mode, dataset box: another
                                                                box's segment, drained from Redis
    {data_dir}/state/shipped/{spider}.list, .to, .lock          Redis mode: segments shipped, to
                                                                which dataset box; one shipper
    {data_dir}/state/dataset-box.json, drain.lock               Redis mode: the dataset box last
                                                                seen; one drain at a time
    {data_dir}/quarantine/items/{spider}/{segment}              a closed segment the catalog
                                                                cannot read, set aside
    {data_dir}/quarantine/shipped/{spider}/{box}--{segment}     Redis mode: a shipped segment the
                                                                drain cannot take, set aside
    {data_dir}/quarantine/why.log                               when and why each was set aside

Everything under ``state/`` is created private to the user (see :mod:`scraper.utils.statefile`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from scraper.utils.sharding import Shard

if TYPE_CHECKING:  # the catalog, status and watchdog commands read the layout without Scrapy
    from scrapy.settings import BaseSettings

SHARD_DELTAFETCH_DB_NAME = "deltafetch.sqlite"
"""A legacy per-shard deltafetch store is ``deltafetch/{spider}-{i}of{N}/`` + this."""


def worker_slug(spider: str, shard: Shard) -> str:
    """``docs-1of4``: names a spider-shard's log, stores and state files."""
    return f"{spider}-{shard.slug}"


@dataclass(frozen=True, slots=True)
class DataLayout:
    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DataLayout:
        """The layout under ``COLLECTOR_DATA_DIR``, which ``scrapy crawl`` sets from the config."""
        return cls(Path(settings["COLLECTOR_DATA_DIR"]))

    @property
    def items_root(self) -> Path:
        return self.root / "items"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    def items_dir(self, spider: str) -> Path:
        return self.items_root / spider

    def log_file(self, spider: str, shard: Shard) -> Path:
        return self.logs_dir / f"{worker_slug(spider, shard)}.log"

    @property
    def runner_log(self) -> Path:
        return self.logs_dir / "runner.log"

    def deltafetch_db(self, spider: str) -> Path:
        """One store per spider, shared by all its shards: the shard plan decides who fetches
        what, never what counts as collected."""
        return self.deltafetch_dir / f"{spider}.sqlite"

    @property
    def deltafetch_dir(self) -> Path:
        return self.state_dir / "deltafetch"

    def contenthash_db(self, spider: str) -> Path:
        return self.contenthash_dir / f"{spider}.sqlite"

    @property
    def contenthash_dir(self) -> Path:
        return self.state_dir / "contenthash"

    def shard_deltafetch_dbs(self, spider: str) -> list[Path]:
        """Legacy per-shard stores present, to be merged into :meth:`deltafetch_db`."""
        return sorted(path / SHARD_DELTAFETCH_DB_NAME
                      for path in _shard_named(self.deltafetch_dir, spider, "")
                      if (path / SHARD_DELTAFETCH_DB_NAME).is_file())

    def shard_contenthash_dbs(self, spider: str) -> list[Path]:
        """Legacy per-shard stores present, to be merged into :meth:`contenthash_db`."""
        return sorted(_shard_named(self.contenthash_dir, spider, ".sqlite"))

    def worker_lock(self, spider: str, shard: Shard) -> Path:
        return self.state_dir / "locks" / f"{worker_slug(spider, shard)}.lock"

    def worker_state(self, spider: str, shard: Shard) -> Path:
        return self.worker_state_of(worker_slug(spider, shard))

    def worker_state_of(self, slug: str) -> Path:
        """The state file of the spider-shard a runner slot names by its slug (``docs-1of4``)."""
        return self.workers_state_dir / f"{slug}.json"

    def round_history(self, spider: str, shard: Shard) -> Path:
        """The spider-shard's recent rounds (:mod:`scraper.utils.roundhistory`)."""
        return self.state_dir / "rounds" / f"{worker_slug(spider, shard)}.json"

    def open_segment_pointer(self, spider: str, shard: Shard) -> Path:
        """Names the spider-shard's last opened item segment (:mod:`pipelines.segmentpointer`)."""
        return self.state_dir / "segments" / f"{worker_slug(spider, shard)}.open"

    @property
    def workers_state_dir(self) -> Path:
        return self.state_dir / "workers"

    @property
    def runner_pidfile(self) -> Path:
        return self.state_dir / "runner.pid"

    @property
    def status_file(self) -> Path:
        return self.state_dir / "status.json"

    @property
    def budget_db(self) -> Path:
        return self.state_dir / "budget.sqlite"

    @property
    def etags_db(self) -> Path:
        return self.state_dir / "etags.sqlite"

    @property
    def runner_launch(self) -> Path:
        return self.state_dir / "runner-command.json"

    @property
    def reload_file(self) -> Path:
        """The outcome of the runner's latest config reload (runner/supervision/reload.py)."""
        return self.state_dir / "reload.json"

    @property
    def resolved_config(self) -> Path:
        """The config the runner runs on, resolved and without secrets, for the processes it
        starts by exec (runner/core/resolved.py)."""
        return self.state_dir / "config.json"

    @property
    def memory_file(self) -> Path:
        return self.state_dir / "memory.json"

    @property
    def disk_reserve(self) -> Path:
        return self.state_dir / "disk-reserve"

    @property
    def health_memory(self) -> Path:
        return self.state_dir / "health.json"

    @property
    def stopped_mark(self) -> Path:
        """Written by ``runner stop``, removed when a runner starts: the watchdog leaves a
        collector stopped on purpose alone."""
        return self.state_dir / "stopped-on-purpose"

    @property
    def watchdog_lock(self) -> Path:
        return self.state_dir / "watchdog.lock"

    @property
    def size_mark(self) -> Path:
        return self.state_dir / "size_mark"

    @property
    def size_mark_lock(self) -> Path:
        return self.state_dir / "size_mark.lock"

    def writebehind_spill(self, spider: str, shard: Shard) -> Path:
        return self.state_dir / "distributed" / f"{worker_slug(spider, shard)}.pending.jsonl"

    @property
    def search_slices_db(self) -> Path:
        return self.state_dir / "search_slices.sqlite"

    @property
    def catalog_db(self) -> Path:
        return self.root / "catalog.sqlite"

    @property
    def catalog_metadata(self) -> Path:
        return self.root / "catalog-metadata.json"

    @property
    def catalog_lock(self) -> Path:
        return self.state_dir / "catalog.lock"

    @property
    def shipped_dir(self) -> Path:
        return self.state_dir / "shipped"

    @property
    def box_id_file(self) -> Path:
        return self.state_dir / "box-id"

    @property
    def dataset_role(self) -> Path:
        return self.state_dir / "dataset-box.json"

    @property
    def drain_lock(self) -> Path:
        return self.state_dir / "drain.lock"

    @property
    def catalog_log(self) -> Path:
        return self.logs_dir / "catalog.log"

    @property
    def feeds_dir(self) -> Path:
        return self.root / "feeds"

    @property
    def quarantine_dir(self) -> Path:
        """Segments no reader can read, kept byte for byte (:mod:`scraper.utils.quarantine`)."""
        return self.root / "quarantine"

    def quarantined_item_file(self, rel: str) -> Path:
        """Where a closed segment of ``items/`` (``rel``: ``{spider}/{name}``) is set aside."""
        return self.quarantine_dir / "items" / rel

    def quarantined_shipment(self, entry: str) -> Path:
        """Where a shipped segment (``entry``: ``{spider}/{box}--{name}``) is set aside."""
        return self.quarantine_dir / "shipped" / entry

    @property
    def quarantine_log(self) -> Path:
        return self.quarantine_dir / "why.log"

    def archive_dir(self, spider: str) -> Path:
        """Archived page bodies, one gzip file per distinct body (scraper/trending/archive.py)."""
        return self.root / "archive" / spider

    def archive_db(self, spider: str) -> Path:
        """The archive's record of every fetch, naming each fetch's body by sha256."""
        return self.state_dir / "archive" / f"{spider}.sqlite"

def _shard_named(directory: Path, spider: str, suffix: str) -> list[Path]:
    """Entries of ``directory`` named exactly ``{spider}-{i}of{N}{suffix}``."""
    pattern = re.compile(rf"{re.escape(spider)}-\d+of\d+{re.escape(suffix)}")
    try:
        return [path for path in directory.iterdir() if pattern.fullmatch(path.name)]
    except FileNotFoundError:
        return []
