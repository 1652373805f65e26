"""The distributed mode as a settings preset: which Redis, which scheduler and which stores.

:func:`configure` runs when the config names a Redis (``redis_url``); without one nothing here
runs and the one-machine mode is untouched. It only sets settings: the components are the same
in both modes, and read their stores from the ``*_STORAGE`` settings (:mod:`scraper.stores`).
Only strings are set (dotted paths): scrapy-redis and redis-py are imported when Scrapy builds
the components, in Redis mode.
"""

from __future__ import annotations

import importlib.util

from scrapy.settings import BaseSettings

from scraper.redis.keys import Keys

STORAGES = {
    "DELTAFETCH_STORAGE": "scraper.dedup.redisurls.RedisDeltaFetchStore",
    "CONTENTHASH_STORAGE": "scraper.dedup.redishashes.RedisContentHashStore",
    "BUDGET_STORAGE": "scraper.budget.redisbudget.RedisBudgetStore",
    "ETAG_STORAGE": "scraper.budget.redisetags.RedisEtagStore",
    "SLICEPLAN_STORAGE": "scraper.slicing.redisplans.RedisSlicePlanStore",
}
WORKER_EXTENSION = "scraper.cluster.heartbeat.DistributedWorker"
SHIPPER_EXTENSION = "scraper.cluster.shipping.SegmentShipper"
LEDGER_EXTENSION = "scraper.cluster.ledger.ClusterLedger"
SCRAPY_ROBOTSTXT = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
ROBOTSTXT = "scraper.downloadermiddlewares.robotstxt.SharedRobotsTxtMiddleware"
LEASE_ACKS_SPIDER = "scraper.cluster.leases.LeaseAckSpiderMiddleware"
LEASE_ACKS_DOWNLOADER = "scraper.cluster.leases.LeaseAckDownloaderMiddleware"
POLITE_HANDLER = "scraper.cluster.politeness.ClusterPoliteDownloadHandler"


def configure(settings: BaseSettings, url: str) -> None:
    """Switch ``settings`` to Redis: scheduler, dupefilter, the stores and the budget."""
    if importlib.util.find_spec("scrapy_redis") is None:
        raise ValueError("the distributed mode (a Redis URL is set) needs scrapy-redis: "
                         "pip install -e '.[redis]'")
    keys = Keys.from_settings(settings)
    values = {
        "COLLECTOR_DISTRIBUTED": True,
        "REDIS_URL": url,
        "REDIS_KEY_PREFIX": keys.prefix,
        # scrapy-redis builds its clients with this class: ours hands out the one shared client
        "REDIS_PARAMS": {"redis_cls": "scraper.redis.connection.SharedClient"},
        "SCHEDULER": "scraper.cluster.scheduler.RedisScheduler",
        "SCHEDULER_PERSIST": True,
        "SCHEDULER_QUEUE_CLASS": "scraper.cluster.scheduler.RoundQueue",
        # JSON, not upstream's pickle: a Redis entry must never be able to run code
        "SCHEDULER_SERIALIZER": "scraper.cluster.serializer",
        "SCHEDULER_QUEUE_KEY": keys.queue_format,
        "SCHEDULER_DUPEFILTER_KEY": keys.dupefilter_format,
        "DUPEFILTER_CLASS": "scraper.cluster.dupefilter.RedisDupeFilter",
        "SPIDER_LOADER_CLASS": "scraper.cluster.spiderloader.DistributedSpiderLoader",
        "REDIS_START_URLS_KEY": keys.start_urls_format,
        **STORAGES,
    }
    for name, value in values.items():
        settings.set(name, value, priority="project")
    # Scrapy's robots.txt middleware lets requests that wait for robots.txt through unchecked
    # (scraper/downloadermiddlewares/robotstxt.py): a worker joining a crawl hits that at once.
    downloader = settings.getdict("DOWNLOADER_MIDDLEWARES")
    downloader[SCRAPY_ROBOTSTXT] = None
    downloader[ROBOTSTXT] = 100
    # Outermost: they see what the others made of a request, last (scraper/cluster/leases.py).
    downloader[LEASE_ACKS_DOWNLOADER] = 1
    settings.set("DOWNLOADER_MIDDLEWARES", downloader, priority="project")
    spider_middlewares = settings.getdict("SPIDER_MIDDLEWARES")
    spider_middlewares[LEASE_ACKS_SPIDER] = 1
    settings.set("SPIDER_MIDDLEWARES", spider_middlewares, priority="project")
    if settings.getbool("DISTRIBUTED_POLITENESS"):
        handlers = settings.getdict("DOWNLOAD_HANDLERS")
        for scheme in ("http", "https"):
            handlers[scheme] = POLITE_HANDLER
        settings.set("DOWNLOAD_HANDLERS", handlers, priority="project")
    extensions = settings.getdict("EXTENSIONS")
    # Before WorkerState (0): signal handlers run in load order, and the heartbeat's close
    # (leases given back, others' leases reclaimed at the last idle check) must be in Scrapy's
    # stats when WorkerState writes the round's final record.
    extensions[WORKER_EXTENSION] = -1
    extensions[SHIPPER_EXTENSION] = 0
    extensions[LEDGER_EXTENSION] = 0
    settings.set("EXTENSIONS", extensions, priority="project")
