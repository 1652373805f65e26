"""The Redis plumbing of the distributed mode: one connection per process behind a circuit
breaker, every key name and default, and the write-behind queue that outlives an outage.
The features' Redis backends and :mod:`scraper.cluster` stand on it."""
