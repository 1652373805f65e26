"""The distributed mode's timings: timeouts, TTLs and intervals that are not Scrapy settings
(those, ``REDIS_KEY_PREFIX`` and ``DISTRIBUTED_*``, live in :mod:`scraper.settings`).

Every key name is in :mod:`scraper.redis.keys`.
"""

# --- connection ----------------------------------------------------------------------------------
SOCKET_TIMEOUT = 2.0
"""Seconds a command may take. Short: every call runs on the worker's reactor thread, and a
stopped (SIGSTOP) Redis must cost a worker a couple of seconds per probe, not minutes."""
CONNECT_TIMEOUT = 2.0
BACKOFF_START = 0.5
"""First pause after Redis is found unreachable; doubles per failed probe ..."""
BACKOFF_MAX = 10.0
"""... up to this: a Redis that is back is noticed within this many seconds."""

# --- rounds, heartbeats --------------------------------------------------------------------------
BUSY_TTL = 15.0
"""A worker's "work in flight" marker lapses after this long without a heartbeat: a killed
worker holds the others' round open at most this long."""
PROC_TTL = 30.0
"""A worker's process key lapses after this long without a heartbeat (it is then dead to the
budget, which frees its tickets, and gone from ``status``)."""
IDLE_POLL = 0.25
"""Seconds between looks at the shared queue while this worker is idle and others are busy."""
SEED_LOCK_TTL = 10.0
"""Seeding takes milliseconds; a seeder killed holding the lock delays the others this long."""
SITE_SET_TTL = 2 * 86400
"""docs' per-site sets belong to one round; they expire on their own."""

# --- the gap ledger ------------------------------------------------------------------------------
LEDGER_STREAM_MAXLEN = 50_000
"""Events the cluster's ledger stream keeps (200-320 bytes of JSON each: about 12 MB at most);
days of rounds at the defaults, where the dataset box copies them to its state/ledger/ at each
``catalog`` (every ``catalog_interval``) and ``gaps``."""
LEDGER_STREAM_TTL = 14 * 86400
"""The stream expires this long after its last event: a cluster taken down leaves no key."""

# --- dedup stores --------------------------------------------------------------------------------
LINKS_TTL_MARGIN = 86400
"""A page's stored links outlive its "collected" record by this much: a skipped page always has
its links to replay."""

# --- budget --------------------------------------------------------------------------------------
BUDGET_LOCK_TTL = 5.0
"""A budget transaction is milliseconds; a holder that stalls longer loses the lock (and its
write is refused), so one stuck process never stops the cluster's GitHub requests."""

# --- runners -------------------------------------------------------------------------------------
RUNNER_BEAT_INTERVAL = 5.0
RUNNER_TTL = 30.0

# --- the cluster's dataset -----------------------------------------------------------------------
SHIP_CHUNK_BYTES = 1024 * 1024
"""Compressed bytes per upload command (and per read of the drain): one segment never sits
whole in a worker's memory, nor one command for longer than a socket timeout."""
UPLOAD_TTL = 3600
"""An upload a killed box left half-done lapses after this long, with the room it reserved
under the cap (a restart begins it again)."""
SHIP_PASS_SECONDS = 30.0
"""A worker's close ships for at most this long; what is left goes at its next round's end."""
