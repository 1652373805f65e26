"""Dedup across runs: URLs (scrapy-deltafetch, :mod:`.deltafetch`) and content (a sha256 over each
item's content fields, :mod:`.contenthash`), each with its storage protocol and its SQLite,
Redis and memory backends, named by ``DELTAFETCH_STORAGE`` and ``CONTENTHASH_STORAGE``."""
