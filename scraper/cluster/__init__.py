"""The distributed mode: several machines share work, dedup and the GitHub budget through Redis,
with scrapy-redis — the engine Scrapy users already run — in thin subclasses.

One module per Scrapy component replaced, in the scrapy-redis style:

* :mod:`.keys` — every Redis key and default, documented in one place;
* :mod:`.connection` — one client per process, from ``REDIS_URL``, behind a circuit breaker;
* :mod:`.scheduler` / :mod:`.dupefilter` — scrapy-redis's, persistent and outage-tolerant,
  fingerprinting with the project's ``REQUEST_FINGERPRINTER``;
* :mod:`.spider` and :mod:`.rounds` — RedisMixin with an async ``start()``; rounds seeded once
  for the cluster, ended when the shared queue is drained and no worker is busy;
* the stores on Redis are in :mod:`scraper.redis.connection`, chosen by the ``*_STORAGE``
  settings like the one-machine ones; :mod:`.writebehind` — their writes survive an outage;
* :mod:`.worker` — the worker's heartbeats; :mod:`.registry` — runners' heartbeats, the cluster
  view for ``status``; :mod:`.wiring` — the settings preset ``scrapy crawl`` applies.

Nothing here is imported in the one-machine mode. See ``docs/distributed.md``.
"""
