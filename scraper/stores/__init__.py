"""What every store shares, whatever its feature: the ``*_STORAGE`` backend loader and its
outage protocol (``base``), SQLite connections and transactions, the memory backends' helpers,
and folding the legacy per-shard stores into one per spider."""
