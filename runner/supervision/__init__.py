"""Running the workers: the pre-forking supervisor, its shard plan and autoscaled pool, memory
guard, reload, and the catalog child it starts every ``catalog_interval``."""
