"""Every Scrapy setting the collector changes, and every default of its own components.

Spider-specific defaults live in each spider's ``custom_settings``; the user's per-spider
``settings:`` mapping in ``collector.yaml`` is applied over them; ``-s KEY=VALUE`` wins over all.
"""

BOT_NAME = "hubcollect"
SPIDER_MODULES = ["spiders"]
NEWSPIDER_MODULE = "spiders"
COMMANDS_MODULE = "scraper.commands"

USER_AGENT = "hubcollect/0.1 (+https://github.com/hubcollect/hubcollect)"
STATS_CLASS = "scraper.statscollectors.StatsCollector"
"""Scrapy's in-memory stats without the per-call deprecation shim of Scrapy 2.19 (1.7 → 0.1 µs
a call, 50–70 calls a docs page)."""

# --- the collector's own settings ----------------------------------------------------------------
# The add-on (scraper/addon.py) reads collector.yaml and the environment once and sets these from
# it, at project priority: ``-s KEY=VALUE`` still wins. The components read them, never the file.
# The config's own defaults (scraper/config/collector.py) are these values.
ADDONS = {"scraper.addon.CollectorAddon": 0}
COLLECTOR_CONFIG = None
"""Path of collector.yaml; None = $COLLECTOR_CONFIG, else the closest collector.yaml in the
working directory or above, else defaults."""
COLLECTOR_DATA_DIR = "data"
"""The config's data_dir; every store and file lives under it (scraper.utils.layout.DataLayout)."""
COLLECTOR_SPIDER_SETTINGS: dict = {}
"""spider name → the config's ``spiders.NAME.settings``, applied at spider priority."""
GITHUB_API_URL = "https://api.github.com"
"""github.api_url: the only origin the token is sent to; the API budget's host; search's URLs."""
GITHUB_WEB_URL = "https://github.com"
"""github.web_url: the trending pages' host, paced by GITHUB_WEB_MIN_INTERVAL."""
GITHUB_TOKEN = None
"""A scraper.config.collector.Secret read from $GITHUB_TOKEN_ENV, or None: anonymous."""
GITHUB_TOKEN_ENV = "GITHUB_TOKEN"
"""The variable the token came from, for messages that tell the user what to fix."""
GITHUB_TOKEN_FILE = None
"""github.token_file: a file (mode 0600) the token is read from when $GITHUB_TOKEN_ENV is not
set, as under cron or systemd; None: the variable only. Read by the config, not a crawl."""
GITHUB_WEB_MIN_INTERVAL = 2.0
"""Seconds between two trending-page requests of all workers together."""
GITHUB_RATE_LIMITS = None
"""resource → scraper.config.collector.RateLimit: the first guess until GitHub's headers are
seen."""
ROUND_INTERVALS = {"trending": 3600.0, "search": 3600.0, "docs": 21600.0}
"""Seconds between a spider's rounds when neither ``spiders.<name>.round_interval`` nor the
global ``round_interval`` is set (README "Cadence": trending lists change a few times a day,
search answers cost budget and change slowly, docs pages come back after ``refresh_after``);
the add-on sets each spider's resolved value, which is the cluster's cooldown between rounds."""
ROUND_INTERVAL = 3600.0
"""The shortest of them: the fallback cooldown of a spider missing from ROUND_INTERVALS."""

# --- the runner's own defaults (config keys no Scrapy component reads) ----------------------------
STOP_TIMEOUT = 20.0  # seconds a worker has to end its round after SIGTERM
LOGS_KEEP_DAYS = 14
CATALOG_INTERVAL = 3600.0  # seconds between the runner's catalog builds; 0 = never
CATALOG_MAX_LINE_BYTES = 16 * 1024 * 1024
"""An item line longer than this is skipped by the catalog, with one line naming file and line,
never held: the build stays within about 300 MB whatever a segment holds (the longest line
the spiders write is a docs page's Markdown, a few MB at most under DOWNLOAD_MAXSIZE)."""
CATALOG_MAX_LINE_VALUES = 1_000_000
"""... and so is a line that would build more JSON values than this (counted on its text, before
it is parsed): 16 MB of ``{},`` are 5.6 million dicts, 456 MB of them. A trending snapshot
holds about a thousand, a docs page's Markdown one per comma or bracket it has."""
# A shard is unhealthy (runner/core/health.py) after HEALTH_FAILED_ROUNDS rounds in a row without an
# answer carrying data, or when a round runs longer than
# HEALTH_MAX_ROUND_INTERVALS × round_interval + HEALTH_MAX_ROUND_SLACK seconds (a hung worker).
HEALTH_FAILED_ROUNDS = 3
HEALTH_MAX_ROUND_INTERVALS = 10
HEALTH_MAX_ROUND_SLACK = 600.0
AUTOSCALE_MAX_USED_CPU_RATIO = 0.95
"""Machine CPU use from which the pool starts no more workers. Crawlee's default too. With 0.9
the pool held back on the latency-bound benchmark (its local server takes CPU) and gained
nothing on the CPU-bound one (benchmarks/README.md)."""

# --- the spiders' start lists and options (config ``spiders.*``) ---------------------------------
TRENDING_LANGUAGES = ["", "python", "rust", "go"]
"""GitHub language slugs; "" = all languages. The start list is languages × periods × spoken
languages."""
TRENDING_PERIODS = ["daily", "weekly", "monthly"]
TRENDING_SPOKEN_LANGUAGES = [""]
"""GitHub's spoken_language_code filter: "" = any spoken language, else ISO 639-1 codes."""
TRENDING_DEVELOPERS_ENABLED = False
"""The developer lists (``/trending/developers``): off unless ``spiders.trending.developers
.enabled``, so an upgrade keeps the lists, shards and disk a box was planned for (README
"Trending developers"). After the repository lists in the start list."""
TRENDING_DEVELOPER_LANGUAGES = [""]
"""The developer lists' languages ("" = all): GitHub's own developers page shows all."""
TRENDING_DEVELOPER_PERIODS = ["daily", "weekly", "monthly"]
SEARCH_QUERIES = ["topic:web-scraping", "language:python stars:>5000"]
SEARCH_SORT = "stars"
SEARCH_PER_PAGE = 100
SEARCH_COMPLETE = True
"""Slice past GitHub's 1000-result cap; False = the first 1000 results only."""
SEARCH_MAX_RESULTS_PER_QUERY = None
"""A safety cap on a complete query, per round; None = no cap."""
# Documentation of well-known Python tools: one AutoThrottled crawl per site, so that the
# README's ``--workers 20`` has a site for every docs worker it plans.
DOCS_START_URLS = [
    "https://docs.scrapy.org/en/latest/",
    "https://docs.python.org/3/library/",
    "https://docs.pytest.org/en/stable/",
    "https://requests.readthedocs.io/en/latest/",
    "https://flask.palletsprojects.com/en/stable/",
    "https://docs.djangoproject.com/en/stable/",
    "https://numpy.org/doc/stable/",
    "https://pandas.pydata.org/docs/",
    "https://docs.twisted.org/en/stable/",
    "https://www.attrs.org/en/stable/",
    "https://pip.pypa.io/en/stable/",
    "https://packaging.python.org/en/latest/",
    "https://docs.sqlalchemy.org/en/20/",
    "https://lxml.de/",
]
DOCS_MAX_PAGES_PER_SITE = 2000
DOCS_REFRESH_AFTER = 7 * 86400.0
"""Seconds after which a stored page is fetched again."""
DOCS_SITEMAPS = True
"""Seed each site's crawl, every round, with the pages under its start path that its
``sitemap.xml`` and robots.txt's ``Sitemap:`` lines (sitemap indexes too) list: pages no link
reaches are collected as well. False = link following only."""
DOCS_SITEMAP_MAXSIZE = 10 * 1024 * 1024
"""Bytes a sitemap may have (after unpacking a ``.xml.gz``): one of 50,000 URLs is about that;
a bigger one is skipped with one WARNING line, and the site crawled by its links."""

# --- what 20 processes on one small box must not each open ---------------------------------------
TELNETCONSOLE_ENABLED = False  # 20 consoles exhaust ports 6023–6073
REMOTE_CONTROL_ENABLED = False  # Scrapy 2.19's code-running HTTP server, on by default
EXTENSIONS = {
    "scrapy.extensions.telnet.TelnetConsole": None,
    "scrapy.extensions.remote_control.RemoteControl": None,
    # MEMUSAGE_* on the current resident set, not the peak a parent process leaves behind;
    # one timer, no log line per check.
    "scrapy.extensions.memusage.MemoryUsage": None,
    "scraper.extensions.memusage.ResidentMemoryUsage": 0,
    "scraper.extensions.logrotate.LogRotation": 0,
    "scraper.extensions.workerstate.WorkerState": 0,
    "scraper.extensions.shutdowngate.ShutdownGate": 0,
    "scraper.utils.diskspace.DiskFullGuard": 0,
    "scraper.extensions.summary.RoundSummary": 0,
    "scraper.extensions.gcthreshold.GcThreshold": 0,
    "scraper.extensions.ledger.FetchLedger": 0,
}
WORKER_STATE_INTERVAL = 10.0  # seconds between a worker's state/workers/*.json updates
ROUND_UNUSUAL_RATIO = 0.5
"""A round is unusual (one line in the worker's log, ``status`` and the watchdog) when a list's
rows or field coverage, or the round's items or bytes, fall below this × the median of the
spider-shard's last ROUND_HISTORY_DAYS, or its errors rise above that median / this
(scraper/utils/roundhistory.py)."""
ROUND_HISTORY_DAYS = 7.0
"""The days of rounds a round is compared with (state/rounds/); also how long a list that gives
no data (one no longer configured) stays in the worker's state file and the freshness metrics."""
LEDGER_ENABLED = True
"""The gap ledger (scraper/extensions/ledger.py): every scheduled fetch of every round and its
outcome, in state/ledger/; read by ``python -m runner gaps``, status, metrics and the catalog."""
LEDGER_KEEP_DAYS = 90
"""Days of state/ledger/ kept (a day's directory is removed after); the catalog's fetch_ledger
table keeps what it loaded."""
COOKIES_ENABLED = False  # nothing here logs in; cookies would only grow memory
GC_GEN0_THRESHOLD = 7000
"""Young-generation GC threshold while crawling (scraper/extensions/gcthreshold.py): CPython's
default, 700, runs a young collection every few items of a docs crawl (benchmarks/README.md);
0 leaves Python's."""

# --- logs: {data_dir}/logs/{spider}-{i}of{N}.log, set per spider-shard by `scrapy crawl` ---------
LOG_LEVEL = "INFO"
LOG_FILE_APPEND = True
LOG_MAX_BYTES = 10 * 1024 * 1024
LOG_BACKUP_COUNT = 3
LOG_ROTATE_INTERVAL = 10.0  # seconds between size checks while crawling

# --- dedup: one store per spider, shared by all its shards (scraper/utils/layout.py) -----------
# URL level: scrapy-deltafetch, in scraper/dedup/deltafetch.py.
DELTAFETCH_ENABLED = True
DELTAFETCH_RESET = False
"""True (``-s DELTAFETCH_RESET=1``, or ``-a deltafetch_reset=1``): this run fetches pages
collected before again; the store is kept and updated."""
CONTENTHASH_RESET = False
"""True (``-s CONTENTHASH_RESET=1``, or ``-a contenthash_reset=1``): this run writes items whose
content was collected before again; the store is kept and updated."""
# The stores, each a class named by a setting as Scrapy's HTTPCACHE_STORAGE (scraper/stores/):
# these are the one-machine ones; the distributed mode names the Redis ones
# (scraper/cluster/wiring.py), tests the in-memory ones (scraper/stores/memory.py).
DELTAFETCH_STORAGE = "scraper.dedup.sqliteurls.SqliteDeltaFetchStorage"
CONTENTHASH_STORAGE = "scraper.dedup.sqlitehashes.SqliteContentHashStorage"
BUDGET_STORAGE = "scraper.budget.sqlitebudget.SqliteBudgetStorage"
ETAG_STORAGE = "scraper.budget.sqliteetags.EtagStore"
SLICEPLAN_STORAGE = "scraper.slicing.sqliteplans.SlicePlanStore"
MEMORY_STORAGE_SPACE = ""
"""The in-memory stores of crawls naming the same space share their contents; "" = none."""
SPIDER_MIDDLEWARES = {
    "scraper.dedup.deltafetch.ShardedDeltaFetch": 100,
    # Closer to the engine than deltafetch: only pages about to be fetched count against a
    # site's cap; what the cap holds back stays in the links of the page that found it.
    "scraper.spidermiddlewares.sitecap.SitePageCap": 90,
}

# --- GitHub: the token only ever goes to the API host --------------------------------------------
DOWNLOADER_MIDDLEWARES = {
    # A redirect is a new request that passes the whole chain again: every hop is checked here.
    # Last before the downloader: the token is on the request only while it is sent, never on
    # a copy made by the budget (960), RetryMiddleware or RedirectMiddleware (githubauth.py).
    "scraper.downloadermiddlewares.githubauth.GitHubAuthMiddleware": 970,
    # Scrapy's own, at their own places: retries wait (backoff), redirect loops fail loudly.
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "scraper.downloadermiddlewares.retry.BackoffRetryMiddleware": 550,
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "scraper.downloadermiddlewares.redirect.LoopSafeRedirectMiddleware": 600,
    # Every waiter obeys robots.txt; an unreadable one is one line, not a traceback.
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "scraper.downloadermiddlewares.robotstxt.SharedRobotsTxtMiddleware": 100,
    # GitHub budget: next to the downloader, so it waits right before sending and sees raw
    # answers (redirects, 403/429) before Redirect- and RetryMiddleware.
    # If-None-Match on GitHub API pages; sees a 304 after the budget has booked it as free.
    "scraper.budget.conditional.ConditionalRequestMiddleware": 955,
    "scraper.budget.middleware.BudgetMiddleware": 960,
    # Outermost: a scheduled fetch's first try, and its final answer after retries and
    # redirects, for the gap ledger (scraper/downloadermiddlewares/ledger.py).
    "scraper.downloadermiddlewares.ledger.LedgerMiddleware": 50,
}

# --- budget: GitHub's rate limits as one budget shared by all workers -----------------------------
# scraper/budget/, scraper/budget/middleware.py; state: {data_dir}/state/budget.sqlite
BUDGET_ENABLED = True
BUDGET_RESET_GUARD = 0.5  # s after x-ratelimit-reset before a new window's first request
BUDGET_MIN_INTERVAL = 0.05  # s; the closest two API requests ever get, catching up included
BUDGET_BACKOFF_START = 60.0  # s; a limit answer without retry-after or remaining 0 ...
BUDGET_BACKOFF_MAX = 3600.0  # ... waits this, doubling while it persists, up to this
BUDGET_MAX_WAIT = 3660.0
"""s; the longest any answer can pause the budget: a farther x-ratelimit-reset or a longer
retry-after (GitHub's windows are at most an hour) is clamped to it, with one WARNING."""
BUDGET_PROBE = True  # read GET /rate_limit (free) when the budget state is unknown or old
BUDGET_CONDITIONAL = True  # If-None-Match with the last ETag: a 304 costs no budget
# GitHub's hosts are paced by the budget: their downloader slots add no delay of their own.
DOWNLOAD_SLOTS = {
    "github-api": {"concurrency": 4, "delay": 0, "jitter": 0},
    "github-web": {"concurrency": 2, "delay": 0, "jitter": 0},
}

# --- items: content-hash dedup, then JSON Lines under {data_dir}/items/{spider}/ -----------------
ITEM_PIPELINES = {
    "pipelines.nesting.NestingLimitPipeline": 40,  # before anything walks the item's values
    "pipelines.surrogates.LoneSurrogatePipeline": 50,  # before anything encodes the item
    "scraper.dedup.contenthash.ContentHashPipeline": 100,
    "pipelines.codefidelity.CodeFidelityPipeline": 800,  # after dedup: a page logged once
    "pipelines.itemstore.JsonLinesItemStore": 900,
}
ITEM_MAX_DEPTH = 32
"""A field nested deeper than this (lists and objects in lists and objects) is written as null
with one WARNING naming the item and field (pipelines/nesting.py): the recursive walks after it
(the lone-surrogate pass, the content hash, JSON) raised RecursionError on one 900 deep."""
ITEMSTORE_ENABLED = True
"""False (``-s ITEMSTORE_ENABLED=0``): this run writes nothing under data/items/, its items go
to the feeds (``-o out.csv``) only: an export that leaves the collection as it was."""
ITEMSTORE_SEGMENT_SECONDS = 3600
"""A spider-shard's rounds append to one segment, closed at the first round's end past this
boundary (aligned to UTC; 86400 = daily): files grow with hours, not rounds. 0: a file per round."""
ITEMSTORE_SEGMENT_BYTES = 256 * 1024 * 1024
"""A segment also closes once it holds this much (bounds one catalog load and one file)."""
ITEMSTORE_COMPRESS = ""
"""``gzip``: a segment is stored as ``.jsonl.gz`` once closed (catalog and ``zcat`` read it)."""
TRENDING_MAX_ROWS = 100
"""Rows kept per trending page (GitHub serves 25); more is a bad response, counted and logged."""
TRENDING_MAX_ELEMENTS = 30_000
"""HTML elements parsed per trending page (GitHub's has about 5,000; 100 rows about 15,000): the
page is cut on its bytes before parsing, so no answer builds a tree of more (about 10 MB)."""
DOCS_MAX_ELEMENTS = 150_000
"""HTML elements a docs page may hold (a real page has a few thousand; 100,000 list items
pass). Counted on the bytes before parsing; a page with more is not collected, one ERROR line:
its tree and Markdown would take a worker past 200 MB."""
TRENDING_PARSER = "scraper.trending.repositories.parse_trending"
"""What reads a trending page into rows (``python -m runner reparse`` reads the archive with
it too); its module's ``PARSER_VERSION`` is recorded with every page it reads."""
TRENDING_DEVELOPERS_PARSER = "scraper.trending.developers.parse_developers"
"""What reads a trending developers page into rows (and reparse, an archived one)."""
TRENDING_ARCHIVE_STORAGE = "scraper.trending.archive.FilesystemPageArchive"
"""The page archive (scraper/trending/archive.py; the ``PageArchiveStorage`` protocol of
scraper/stores/base.py, built with ``build_from_crawler``): every fetched trending page (the
developer lists' too) as served, each body once. Local to the box that fetched the page, in the
distributed mode too."""
TRENDING_ARCHIVE_RETENTION = None
"""Seconds an archived page is kept; None = forever. ``scrapy crawl`` sets it from the config's
``spiders.trending.archive_retention``."""
TRENDING_ARCHIVE_HEADERS = ["Content-Type", "Content-Language"]
"""Response headers kept with each archived fetch (``archive export`` writes them into the WARC
record): what a replay needs to show the page as served. Per-request headers (Date, request ids,
CSP nonces, Set-Cookie with its session) are not kept: each would cost every fetch, and a cookie
is a credential."""
TRENDING_MAX_BYTES = 16 * 1024 * 1024
"""The largest body the archive gives back (``reparse``, ``archive show|list|export``): what
``DOWNLOAD_MAXSIZE`` lets a GitHub page be. A body that decompresses past it is damage or a
bomb: skipped with one line naming the fetch, never held in memory whole."""
LOG_STARTUP_COMPONENTS = False
"""Scrapy's lists of enabled components and overridden settings at each crawl's start (about
4 KB, the same every round of every worker): off; ``-s LOG_STARTUP_COMPONENTS=1`` logs them
(scraper/utils/quietlog.py)."""
LOG_VERSIONS: list[str] = []
"""Scrapy would log a dozen lines of versions at every crawl's start: every worker, every round.
The runner logs them once at its start (runner.log); ``scrapy version -v`` prints them."""
WARN_ON_GENERATOR_RETURN_VALUE = False
"""Scrapy's check reads and parses each callback's source (inspect, ast) on the first response
of every worker, every round, into memory each worker keeps; the project's callbacks return no
values (benchmarks/README.md has the figure)."""
DEFAULT_DROPITEM_LOG_LEVEL = "DEBUG"  # duplicates are the normal case on every later round

# --- politeness and robustness -------------------------------------------------------------------
ROBOTSTXT_OBEY = False  # the GitHub spiders; the docs spider obeys robots.txt
CONCURRENT_REQUESTS = 16
# Scrapy 2.19 starts CONCURRENT_ITEMS + 1 asyncio tasks per response: the default, 100, cost 30%
# of a docs worker's CPU per page (benchmarks/README.md has the one-off measurements).
# The pipelines are synchronous: more in parallel gains nothing.
CONCURRENT_ITEMS = 2
CONCURRENT_REQUESTS_PER_DOMAIN = 4
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.5
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 2.0
RETRY_TIMES = 3
# Retry k waits RETRY_BACKOFF_BASE × 2^(k-1) s (≤ RETRY_BACKOFF_MAX): a 5xx storm is not hammered.
RETRY_BACKOFF_BASE = 1.0
RETRY_BACKOFF_MAX = 10.0
DOWNLOAD_TIMEOUT = 30
# 20 workers × 16 requests in flight must fit 2 GB: no single body above 16 MB, warn at 4 MB.
DOWNLOAD_MAXSIZE = 16 * 1024 * 1024
DOWNLOAD_WARNSIZE = 4 * 1024 * 1024
REDIRECT_MAX_TIMES = 10

# --- one worker's memory: 20 workers on a 2 GB box, each ≤ 200 MB RSS on any single response ----
# The docs spider caps a page at 2 MB (spiders/docs.py); past that, Scrapy's memusage check is
# the backstop: above the limit the worker closes its round (finish_reason memusage_exceeded,
# one ERROR line) instead of growing. Checked every second, so it fires right after the
# response that pushed the peak up, not a minute later (Scrapy's default interval); by
# scraper.extensions.memusage.ResidentMemoryUsage: one timer, no log line a second.
MEMUSAGE_ENABLED = True
MEMUSAGE_LIMIT_MB = 200
MEMUSAGE_WARNING_MB = 150
MEMUSAGE_CHECK_INTERVAL_SECONDS = 1.0

FEED_EXPORT_ENCODING = "utf-8"

# --- distributed mode (scraper/cluster/, docs/distributed.md): off without a Redis URL -------
# A Redis URL (config redis_url; $COLLECTOR_REDIS_URL, which `python -m runner --redis-url` sets,
# wins over the file's) makes `scrapy crawl` switch the scheduler, dupefilter, dedup stores and
# GitHub budget to Redis (scraper/cluster/wiring.py); nothing below is read on one machine.
REDIS_KEY_PREFIX = "hubcollect"  # every key starts with it: collectors can share one Redis
DISTRIBUTED_HEARTBEAT_INTERVAL = 2.0
"""Seconds between a worker's heartbeats (busy marker, process key, write-behind flush)."""
DISTRIBUTED_CLAIM_TTL = 600
"""Seconds a content hash's claim is kept at most while its worker has not confirmed it; a claim
counts only while that worker's busy marker lives, so a dead worker's claims free the content for
the others after DISTRIBUTED_LEASE; this only bounds how long the claim key stays in Redis."""
DISTRIBUTED_LEASE = 15.0
"""Seconds a worker's leases outlive its last heartbeat: the requests a killed (or cut off) box
had taken from the shared queue go back to it this long after it stopped answering."""
DISTRIBUTED_POLITENESS = True
"""Cap each host at CONCURRENT_REQUESTS_PER_DOMAIN requests at once and DOWNLOAD_DELAY (or
AutoThrottle's delay) between two, for the whole cluster (scraper/cluster/politeness.py),
not per worker."""
DISTRIBUTED_DOWNLOAD_HANDLER = "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler"
"""The handler that sends http(s) requests once the cluster gave them their turn."""
DISTRIBUTED_SHIP_MAX_BYTES = 2 * ITEMSTORE_SEGMENT_BYTES
"""Bytes of closed item segments Redis may hold for the dataset box to drain, uploads begun
included (each counted at its size on disk): past it a box keeps its segments on disk and ships
them later (scraper/cluster/shipping.py). Redis holds at most this, or one segment larger
than it alone. Twice a full segment, so one goes while another waits to be drained. The counter
is the cluster's, each spider's uploads held to its own value: Redis holds at most the largest
value of any spider on any box, so set one value everywhere."""
