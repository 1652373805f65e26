"""What each component asks of its store, one Protocol per store, as Scrapy's
``HTTPCACHE_STORAGE`` asks of a cache storage.

A setting names the class (``DELTAFETCH_STORAGE``, ``CONTENTHASH_STORAGE``, ``BUDGET_STORAGE``,
``ETAG_STORAGE``, ``SLICEPLAN_STORAGE``, ``TRENDING_ARCHIVE_STORAGE``; defaults in
:mod:`scraper.settings`); the component builds it with Scrapy's ``build_from_crawler``.
Implementations: :mod:`scraper.stores.sqlite` (one machine), :mod:`scraper.stores.redis` (the
distributed mode), :mod:`scraper.stores.memory` (in-process tests); the page archive's is
:mod:`scraper.stores.archive` (local files on every box).

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

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from scrapy.crawler import Crawler
from scrapy.utils.misc import build_from_crawler, load_object

from scraper.searchslices import Slice

if TYPE_CHECKING:
    from scraper.stores.archive import ArchivedPage

ETAG_KEEP_S = 30 * 86400.0
"""An ETag unseen this long is dropped."""

PageTag = tuple[str, str | None]
"""A page's ``(etag, link)``."""

WHOLE: list[Slice] = []
"""The plan of a query that fits under the cap: no slices, the query itself."""


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


class DeltaFetchStorage(Outage, Protocol):
    """URL-level dedup: request key → time collected, and the page's outgoing links."""

    def open_spider(self, spider: str, refresh_after: float | None) -> None: ...

    def get(self, key: bytes) -> str | None:
        """When the page was collected (``str(time.time())``), None if never."""

    def links(self, key: bytes) -> list[str]: ...

    def record(self, key: bytes, value: str, links: list[str] | None = None) -> None:
        """The page is collected (and, unless None, its links are these): all or nothing."""

    def close_spider(self) -> None: ...


class ContentHashStorage(Outage, Protocol):
    """Content-level dedup: claim a hash, confirm it once written, release it if not."""

    def open_spider(self, spider: str, ignore_before: str) -> None:
        """Hashes written before ``ignore_before`` (``collected_at`` format; "" = none) count
        as not written."""

    def claim(self, digest: str) -> bool:
        """True if this process may write the content."""

    def confirm(self, digest: str, collected_at: str) -> None: ...

    def release(self, digest: str) -> None: ...

    def close_spider(self) -> None: ...


class BudgetStorage(Outage, Protocol):
    """The GitHub budget (:class:`scraper.budget.store.BudgetStore`'s methods)."""

    def define(self, key: Any, spec: Any) -> None: ...

    def reserve(self, key: Any) -> Any: ...

    def claim(self, ticket: Any) -> Any: ...

    def cancel(self, ticket: Any) -> None: ...

    def slot_of(self, ticket: Any) -> float: ...

    def complete(self, ticket: Any, key: Any, rate: Any, **kwargs: Any) -> None: ...

    def limited(self, ticket: Any, key: Any, rate: Any, kind: str,
                retry_after: float | None) -> Any: ...

    def probe_result(self, identity: str, resources: Any) -> None: ...

    def buckets(self) -> list[dict[str, Any]]: ...

    def release_process(self) -> None: ...

    def close(self) -> None: ...


class EtagStorage(Outage, Protocol):
    """The ETag (and ``Link``) last seen for each GitHub API page, per identity."""

    def get(self, identity: str, url: str) -> PageTag | None: ...

    def remember(self, identity: str, pages: dict[str, PageTag]) -> None:
        """``url → (etag, link)`` of pages whose items are all written, all or nothing."""

    def close(self) -> None: ...


class SlicePlanStorage(Outage, Protocol):
    """The slices each search query was cut into. A plan is saved whole, in one atomic write:
    a reader sees the previous plan or the new one, never part of one."""

    def load(self, query: str) -> list[Slice] | None:
        """The query's last plan (``[]``: the query itself, unsliced), None if it has none."""

    def save(self, query: str, slices: list[Slice]) -> None: ...

    def replace(self, query: str, expected: list[Slice] | None, slices: list[Slice]) -> bool:
        """Save ``slices`` only if the query's plan is still ``expected`` (None: it has none),
        in one atomic step; False (nothing written) if another process changed it first."""

    def close(self) -> None: ...


@runtime_checkable
class PageArchiveStorage(Outage, Protocol):
    """The page archive (:mod:`scraper.stores.archive`): every fetched trending page as served,
    for ``python -m runner reparse``. Local to the box that fetched the page, in the
    distributed mode too, so always up."""

    def put(self, page: ArchivedPage, body: bytes) -> None:
        """Keep ``body`` (once per sha256) and record the fetch."""

    def body(self, page: ArchivedPage) -> bytes:
        """The page's body as it was served."""

    def pages(self, since: str | None = None) -> Iterator[ArchivedPage]:
        """Every recorded fetch (observed at or after ``since``), oldest first."""

    def recent(self, list_key: str, limit: int, before: str) -> list[ArchivedPage]:
        """The list's last ``limit`` fetches observed before ``before`` that were not drifted,
        newest first: a markup change stays drift until the parser reads it again."""

    def reparsed(self, page: ArchivedPage) -> None:
        """Record that ``page`` (same url and observed_at) was read again by a newer parse."""

    def prune(self, older_than: str) -> int:
        """Forget fetches observed before ``older_than`` and the bodies only they named;
        returns how many fetches were forgotten."""

    def close(self) -> None: ...


def encode_plan(slices: list[Slice]) -> str:
    return json.dumps([s.to_json() for s in slices])


def decode_plan(raw: str | bytes) -> list[Slice] | None:
    """None for a plan this version did not write: planned afresh, and overwritten once the
    new plan is whole."""
    try:
        return [Slice.from_json(entry) for entry in json.loads(raw)]
    except (ValueError, TypeError):
        return None


def build_store(crawler: Crawler, setting: str) -> Any:
    """The store the setting names, built as Scrapy builds components."""
    return build_from_crawler(load_object(crawler.settings[setting]), crawler)
