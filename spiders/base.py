"""What every collector spider shares: settings, shard, and the fields every item carries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.settings import BaseSettings
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.python import global_object_name
from twisted.python.failure import Failure

from scraper.downloadermiddlewares.retry import GAVE_UP
from scraper.items import CollectedItem
from scraper.signals import fetch_judged
from scraper.utils.diskspace import is_disk_full
from scraper.utils.ledger import FAILED, LEDGER_META
from scraper.utils.outcome import failure_cause, note_error
from scraper.utils.sharding import UNSHARDED, Shard
from scraper.utils.spiderargs import (
    RESET_ARGUMENTS,
    SCRAPYD_ARGUMENTS,
    SPIDER_ARGUMENTS,
    SpiderArgumentError,
    parse_switch,
)
from scraper.utils.stamps import utc_stamp

ItemT = TypeVar("ItemT", bound=CollectedItem)


def failed_request(failure: Failure) -> scrapy.Request:
    """The request an errback's failure is of: Scrapy sets ``failure.request`` before it calls
    the errback."""
    request = getattr(failure, "request", None)
    if not isinstance(request, scrapy.Request):
        raise TypeError(f"not an errback's failure (no request): {failure!r}")
    return request


def http_status(failure: Failure) -> int | None:
    """The status of the answer an HttpError failure is of; None for any other failure."""
    exc = failure.value
    return exc.response.status if isinstance(exc, HttpError) else None


class CollectorSpider(scrapy.Spider):
    """A spider whose start list comes from its settings (the config's, set by
    scraper/addon.py) and is cut by ``-a shard=i/N``."""

    shard: Shard = UNSHARDED

    def __init__(self, *args: Any, shard: str | Shard = "0/1", **kwargs: Any) -> None:
        # Read by the dedup components (scrapy-deltafetch's convention: a spider attribute).
        switches = {name: parse_switch(name, kwargs.pop(name))
                    for name in RESET_ARGUMENTS if name in kwargs}
        unknown = sorted(set(kwargs) - {"name", "start_urls", *SCRAPYD_ARGUMENTS})
        if unknown:
            raise SpiderArgumentError(
                f"-a {unknown[0]}: not an argument of this spider; it takes: "
                + ", ".join(SPIDER_ARGUMENTS)
            )
        super().__init__(*args, **kwargs)
        for name, value in switches.items():
            setattr(self, name, value)
        self.shard = shard if isinstance(shard, Shard) else Shard.parse(shard)

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        """Class defaults (``custom_settings``) first, then the config's ``settings:`` mapping,
        both at spider priority, so ``-s KEY=VALUE`` (cmdline priority) still wins."""
        super().update_settings(settings)
        mine = settings.getdict("COLLECTOR_SPIDER_SETTINGS").get(cls.name)
        if mine:
            settings.setdict(mine, priority="spider")

    def start_entries(self) -> Sequence[Any]:
        """This spider's whole start list, unsharded, in config order."""
        raise NotImplementedError

    def my_entries(self) -> list[Any]:
        return self.shard.select(self.start_entries())

    ledger_kind = "entry"
    """What one scheduled fetch of this spider is, in the gap ledger: a list, a query, a site."""

    def ledger_key(self, entry: Any) -> str:
        """The gap ledger's name of a start entry; its requests carry it in meta
        ``ledger_key``."""
        return str(entry)

    def ledger_plan(self) -> tuple[str, list[str]]:
        """This round's scheduled fetches, for the gap ledger (scraper/extensions/ledger.py)."""
        return self.ledger_kind, [self.ledger_key(entry) for entry in self.my_entries()]

    def request_failed(self, failure: Failure) -> None:
        """Errback of every request: a page that cannot be had is counted and logged once.

        Counted in ``{spider}/failed_requests`` and ``{spider}/failed_requests/{module.Exception}``
        (Scrapy's ``downloader/exception_type_count/*`` counts the download errors too). One
        ERROR line per page: Scrapy's ``Gave up retrying …`` when retries ran out, else
        ``cannot fetch URL: module.Exception: reason`` here — never a traceback. An HTTP error
        status goes on to Scrapy's HttpErrorMiddleware (``httperror/response_ignored_count``,
        one INFO line); a robots.txt refusal is policy, not a failure.
        """
        exc = failure.value
        assert exc is not None, "an errback's failure holds its exception"
        request = getattr(failure, "request", None)
        if failure.check(IgnoreRequest) and "robots.txt" in str(exc):
            self.not_fetched(request)
            return
        # The URL the spider asked for, not the last hop of its redirects.
        url = (request.meta.get("redirect_urls") or [request.url])[0] if request else "?"
        if isinstance(exc, HttpError):
            note_error(self.crawler.stats, f"HTTP {exc.response.status} at {url}")
            failure.raiseException()
        note_error(self.crawler.stats, failure_cause(exc, url))
        kind = global_object_name(type(exc))  # as Scrapy names them: module.Class
        self.crawler.stats.inc_value(f"{self.name}/failed_requests")
        self.crawler.stats.inc_value(f"{self.name}/failed_requests/{kind}")
        if request is not None and request.meta.get(GAVE_UP):
            return  # Scrapy logged "Gave up retrying" for it
        if is_disk_full(exc):
            return  # a store's full disk (the GitHub budget's): reported once, round closing
        reason = next(iter(str(exc).splitlines()), "") or "no detail (see the warning above)"
        self.logger.error("cannot fetch %s: %s: %s", url, kind, reason[:300])

    def yielded_nothing(self, response: Any, cause: str, detail: str) -> None:
        """An answer of a scheduled fetch that held nothing to keep (a trending page of zero
        rows, a site that redirects away): a failed fetch in the gap ledger, whatever its
        status said."""
        if LEDGER_META in response.meta:
            self.crawler.signals.send_catch_log(fetch_judged, request=response.request,
                                                outcome=FAILED, cause=cause, detail=detail)

    def not_fetched(self, request: Any) -> None:
        """A request refused before it was sent (robots.txt): nothing was fetched."""

    def stamp(self, item: ItemT) -> ItemT:
        item["spider"] = self.name
        item["shard"] = str(self.shard)
        item["collected_at"] = utc_stamp()
        return item
