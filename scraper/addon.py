"""The one bridge from ``collector.yaml`` to Scrapy: an add-on (``ADDONS`` in scraper/settings.py).

The config is read once per process: by the runner, which validates it and hands the object to
the workers it forks (:func:`use_config`), or, in a ``scrapy crawl`` started by hand, here on
first use (``COLLECTOR_CONFIG``, else ``$COLLECTOR_CONFIG``, else the closest
``collector.yaml`` here or above). Either way a worker is exactly ``scrapy crawl SPIDER -a
shard=i/N`` and reads the same settings.

Everything is set at project priority: over scraper/settings.py's defaults, under the spider's
``custom_settings`` and the config's per-spider ``settings:`` (spider priority), and under
``-s KEY=VALUE`` (cmdline priority), which wins over the file as it does over any setting.
"""

from __future__ import annotations

from typing import Any

from scrapy.settings import BaseSettings

from scraper.config.collector import SPIDER_NAMES, CollectorConfig, load_config
from scraper.utils.layout import DataLayout

PRIORITY = "project"

_config: CollectorConfig | None = None
_read: dict[str | None, CollectorConfig] = {}


def use_config(config: CollectorConfig) -> None:
    """Make ``config`` this process's config: the runner's validated object, which its forked
    workers inherit (nothing is read again, nothing goes through the environment)."""
    global _config
    _config = config


def current_config(settings: BaseSettings) -> CollectorConfig:
    """The runner's config, else the file the settings (``COLLECTOR_CONFIG``) or environment
    name, read once per process."""
    if _config is not None:
        return _config
    path = settings.get("COLLECTOR_CONFIG")
    if path not in _read:
        _read[path] = load_config(path)
    return _read[path]


def config_settings(config: CollectorConfig) -> dict[str, Any]:
    """The config as the settings the components read (scraper/settings.py documents each)."""
    github = config.github
    layout = DataLayout(config.data_dir.absolute())
    return {
        "COLLECTOR_DATA_DIR": str(layout.root),
        # scrapy-deltafetch's own lookup; absolute, so it never makes a .scrapy/ directory
        # wherever a worker runs. The store itself is DataLayout.deltafetch_db.
        "DELTAFETCH_DIR": str(layout.deltafetch_dir),
        "COLLECTOR_SPIDER_SETTINGS": {name: dict(config.spider(name).settings)
                                      for name in SPIDER_NAMES},
        "GITHUB_API_URL": github.api_url,
        "GITHUB_WEB_URL": github.web_url,
        "GITHUB_TOKEN": github.token,
        "GITHUB_TOKEN_ENV": github.token_env,
        "GITHUB_WEB_MIN_INTERVAL": github.web_min_interval,
        "GITHUB_RATE_LIMITS": github.first_guess_limits(),
        "ROUND_INTERVAL": config.shortest_round_interval,
        "ROUND_INTERVALS": {name: config.round_interval_of(name) for name in SPIDER_NAMES},
        "TRENDING_LANGUAGES": list(config.trending.languages),
        "TRENDING_PERIODS": list(config.trending.periods),
        "TRENDING_SPOKEN_LANGUAGES": list(config.trending.spoken_languages),
        "TRENDING_ARCHIVE_RETENTION": config.trending.archive_retention,
        "TRENDING_DEVELOPERS_ENABLED": config.trending.developers.enabled,
        "TRENDING_DEVELOPER_LANGUAGES": list(config.trending.developers.languages),
        "TRENDING_DEVELOPER_PERIODS": list(config.trending.developers.periods),
        "SEARCH_QUERIES": list(config.search.queries),
        "SEARCH_SORT": config.search.sort,
        "SEARCH_PER_PAGE": config.search.per_page,
        "SEARCH_COMPLETE": config.search.complete,
        "SEARCH_MAX_RESULTS_PER_QUERY": config.search.max_results_per_query,
        "DOCS_START_URLS": list(config.docs.start_urls),
        "DOCS_MAX_PAGES_PER_SITE": config.docs.max_pages_per_site,
        "DOCS_REFRESH_AFTER": config.docs.refresh_after,
        "DOCS_SITEMAPS": config.docs.sitemaps,
    }


class CollectorAddon:
    """Sets the config's settings before Scrapy builds anything from them."""

    @classmethod
    def update_pre_crawler_settings(cls, settings: BaseSettings) -> None:
        """On the process's settings, before logging is configured and any crawler is made:
        the spiders' ``update_settings`` see the config's values (spiders/base.py)."""
        apply(settings)

    def update_settings(self, settings: BaseSettings) -> None:
        """On each crawler's settings: the same values, for a crawler made on settings that no
        CrawlerProcess or CrawlerRunner saw."""
        apply(settings)


def apply(settings: BaseSettings) -> None:
    """The config's settings, and the distributed mode's when it names a Redis."""
    config = current_config(settings)
    settings.setdict(config_settings(config), priority=PRIORITY)
    if _config is not None:
        # A runner's round: its worker state file keeps the stats and the summary line says
        # what they mean, while Scrapy's dump would be two thirds of the round's log. It goes
        # to DEBUG (scraper/extensions/summary.py); a crawl by hand keeps it.
        settings.set("STATS_DUMP", False, priority=PRIORITY)
        # Likewise its per-minute "Crawled N pages" line: the state file has those counts every
        # WORKER_STATE_INTERVAL, and a long docs round would log one line a minute.
        settings.set("LOGSTATS_INTERVAL", 0, priority=PRIORITY)
    if config.redis_url and not settings.getbool("COLLECTOR_DISTRIBUTED"):
        from scraper.cluster import wiring

        wiring.configure(settings, config.redis_url)
