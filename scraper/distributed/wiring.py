"""Switching a crawl to the distributed mode: which Redis, and which components.

``scrapy crawl`` calls :func:`redis_url` and, when it names a Redis, :func:`configure`; without
one nothing here runs and the one-machine mode is untouched. Only strings are set (dotted
paths): scrapy-redis and redis-py are imported when Scrapy builds the components, in Redis mode.
"""

from __future__ import annotations

import importlib.util
import os
import re

from scrapy.settings import BaseSettings

from scraper.config import CollectorConfig
from scraper.distributed.keys import DEFAULT_PREFIX, REDIS_URL_ENV, Keys

REDIS_URL_RE = re.compile(r"^(redis|rediss|unix)://\S+$")
REDIS_URL_HELP = "a Redis URL such as redis://127.0.0.1:6379/0"

# one-machine component → its Redis subclass, in the same place of the same chain
SWAPS = {
    "ITEM_PIPELINES": ("pipelines.contenthash.ContentHashPipeline",
                       "scraper.distributed.contenthash.RedisContentHashPipeline"),
    "SPIDER_MIDDLEWARES": ("scraper.spidermiddlewares.deltafetch.ShardedDeltaFetch",
                           "scraper.distributed.deltafetch.RedisDeltaFetch"),
    "DOWNLOADER_MIDDLEWARES": ("scraper.downloadermiddlewares.ratelimit.GitHubBudgetMiddleware",
                               "scraper.distributed.budget.RedisGitHubBudgetMiddleware"),
}
WORKER_EXTENSION = "scraper.distributed.worker.DistributedWorker"
SCRAPY_ROBOTSTXT = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
ROBOTSTXT = "scraper.downloadermiddlewares.robotstxt.SharedRobotsTxtMiddleware"


def redis_url(config: CollectorConfig) -> str | None:
    """``$COLLECTOR_REDIS_URL`` (what the runner's ``--redis-url`` sets), else the config's
    ``redis_url``, else None (one machine). Raises ValueError, one line, on a bad value."""
    from_env = os.environ.get(REDIS_URL_ENV)
    if from_env:
        if not REDIS_URL_RE.fullmatch(from_env):
            raise ValueError(f"${REDIS_URL_ENV}: {from_env!r} is not {REDIS_URL_HELP}")
        return from_env
    return config.redis_url


def configure(settings: BaseSettings, url: str, config: CollectorConfig) -> None:
    """Switch ``settings`` to Redis: scheduler, dupefilter, the stores and the budget."""
    if importlib.util.find_spec("scrapy_redis") is None:
        raise ValueError("the distributed mode (a Redis URL is set) needs scrapy-redis: "
                         "pip install -e '.[redis]'")
    keys = Keys(settings.get("REDIS_KEY_PREFIX") or DEFAULT_PREFIX)
    values = {
        "COLLECTOR_DISTRIBUTED": True,
        "REDIS_URL": url,
        "REDIS_KEY_PREFIX": keys.prefix,
        # scrapy-redis builds its clients with this class: ours hands out the one shared client
        "REDIS_PARAMS": {"redis_cls": "scraper.distributed.connection.SharedClient"},
        "SCHEDULER": "scraper.distributed.scheduler.RedisScheduler",
        "SCHEDULER_PERSIST": True,
        "SCHEDULER_QUEUE_CLASS": "scraper.distributed.scheduler.RoundQueue",
        # JSON, not upstream's pickle: a Redis entry must never be able to run code
        "SCHEDULER_SERIALIZER": "scraper.distributed.serializer",
        "SCHEDULER_QUEUE_KEY": keys.queue_format,
        "SCHEDULER_DUPEFILTER_KEY": keys.dupefilter_format,
        "DUPEFILTER_CLASS": "scraper.distributed.dupefilter.RedisDupeFilter",
        "REDIS_START_URLS_KEY": keys.start_urls_format,
        "DISTRIBUTED_ROUND_COOLDOWN": config.round_interval,
    }
    for name, value in values.items():
        settings.set(name, value, priority="project")
    for name, (old, new) in SWAPS.items():
        components = settings.getdict(name)
        if old in components:
            components[new] = components.pop(old)
            settings.set(name, components, priority="project")
    # Scrapy's robots.txt middleware lets requests that wait for robots.txt through unchecked
    # (scraper/downloadermiddlewares/robotstxt.py): a worker joining a crawl hits that at once.
    downloader = settings.getdict("DOWNLOADER_MIDDLEWARES")
    downloader[SCRAPY_ROBOTSTXT] = None
    downloader[ROBOTSTXT] = 100
    settings.set("DOWNLOADER_MIDDLEWARES", downloader, priority="project")
    extensions = settings.getdict("EXTENSIONS")
    extensions[WORKER_EXTENSION] = 0
    settings.set("EXTENSIONS", extensions, priority="project")
