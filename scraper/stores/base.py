"""What every store shares, as Scrapy's ``HTTPCACHE_STORAGE`` names a cache storage: a setting
names the class (``DELTAFETCH_STORAGE``, ``CONTENTHASH_STORAGE``, ``BUDGET_STORAGE``,
``ETAG_STORAGE``, ``SLICEPLAN_STORAGE``, ``TRENDING_ARCHIVE_STORAGE``; defaults in
:mod:`scraper.settings`) and the component builds it with :func:`build_store`. Each store's
protocol and its SQLite, Redis and memory backends live beside the component in its feature's
folder (:mod:`scraper.dedup`, :mod:`scraper.budget`, :mod:`scraper.slicing`,
:mod:`scraper.trending`); this module holds the outage contract they all keep.

The outage contract, the same for every store, handled once in each component:

* ``up`` is False while the store is known to be unreachable; ``await wait_until_up(stop)``
  returns True once it answers again, False if ``stop()`` became true first. A local store is
  always up.
* Any method may raise :class:`StoreUnavailable` (never a local store): nothing was read or
  written. A lookup that fails counts as "unknown", which every component treats as "not seen"
  (fetch again, ask unconditionally, plan afresh): never skip what may be new.
* Writes a store queues while it is away (Redis' write-behind) are not lost to an outage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class StoreUnavailable(Exception):
    """The store cannot be reached right now: nothing was read or written."""


class Outage(Protocol):
    @property
    def up(self) -> bool: ...

    async def wait_until_up(self, should_stop: Callable[[], bool] | None = None) -> bool: ...


class AlwaysUp:
    """The outage contract of a store on this machine: never away."""

    up = True

    async def wait_until_up(self, should_stop: Callable[[], bool] | None = None) -> bool:
        return True


def build_store(crawler: Crawler, setting: str) -> Any:
    """The store the setting names, built as Scrapy builds components."""
    # Scrapy is imported here, not at the top: the catalog and the cron commands read the
    # protocols' modules and must not pay Scrapy's import.
    from scrapy.utils.misc import build_from_crawler, load_object

    return build_from_crawler(load_object(crawler.settings[setting]), crawler)
