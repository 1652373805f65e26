"""Item pipelines: content-hash dedup, then the JSON Lines item store."""
