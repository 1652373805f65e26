"""Content-level dedup: :mod:`scraper.contenthash`'s rule over the store ``CONTENTHASH_STORAGE``
names (on one machine ``{data_dir}/state/contenthash/{spider}.sqlite``, shared by all its
shards; on Redis, one for the cluster)."""

from __future__ import annotations

from scraper.contenthash import ContentHashDedup


class ContentHashPipeline(ContentHashDedup):
    pass
