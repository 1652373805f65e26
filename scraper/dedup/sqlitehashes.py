"""``CONTENTHASH_STORAGE`` on one machine: ``{data_dir}/state/contenthash/{spider}.sqlite``,
shared by all the spider's shards, the per-shard stores of earlier versions merged in."""

from __future__ import annotations

from pathlib import Path

from scraper.dedup.sqlitemapping import SpiderStorage, SqliteMapping

STORE_KIND = "contenthash"


class SqliteContentHashStore(SqliteMapping):
    """hash → the ``collected_at`` of its item.

    A claim is local to the process (the pipeline's ``in_flight`` set): two shards that meet
    the same content at the same instant may both write it — a race of one item per page, the
    bound README's "Dedup" gives.
    """

    def __init__(self, path: Path, *, ignore_before: str = "") -> None:
        super().__init__(path, kind=STORE_KIND)
        self.ignore_before = ignore_before

    def claim(self, digest: str) -> bool:
        written = self.get(bytes.fromhex(digest))
        return written is None or written < self.ignore_before

    def confirm(self, digest: str, collected_at: str) -> None:
        self[bytes.fromhex(digest)] = collected_at

    def release(self, digest: str) -> None:
        """Nothing was stored for a claim."""


class SqliteContentHashStorage(SpiderStorage[SqliteContentHashStore]):
    def open_spider(self, spider: str, ignore_before: str) -> None:
        self._db = SqliteContentHashStore(self.layout.contenthash_db(spider),
                                          ignore_before=ignore_before)
        self._db.absorb(self.layout.shard_contenthash_dbs(spider))

    def claim(self, digest: str) -> bool:
        return self.db.claim(digest)

    def confirm(self, digest: str, collected_at: str) -> None:
        self.db.confirm(digest, collected_at)

    def release(self, digest: str) -> None:
        """Nothing was stored for a claim."""
