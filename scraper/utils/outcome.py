"""What a worker's round produced, in Scrapy's stats: what health is judged by.

Processes that exist say nothing about whether data flows; a round's answers do. The spiders
note the first failure's cause and every listing page that parsed to zero rows here, in the
crawler's stats (scalars only, so they reach the worker's state file with the rest), and
:class:`scraper.extensions.workerstate.WorkerState` turns the stats into a round outcome.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scraper.utils.units import counted

if TYPE_CHECKING:  # the runner's commands read outcomes without importing Scrapy
    from scrapy.statscollectors import StatsCollector

FIRST_ERROR = "outcome/first_error"
EMPTY_LISTINGS = "outcome/empty_listings"
EMPTY_LISTING_URL = "outcome/empty_listing_url"
CAUSE_MAX = 300
"""Characters of a cause kept: one line, whole enough to say what to fix."""
NO_DATA = "no answer carried data"
NOTHING_FETCHED_EXIT = 5
"""``scrapy crawl``'s exit status when its round fetched nothing (:func:`fetched_nothing`): not
a crash, so the runner schedules the next round as usual and health judges the shard."""


def failure_cause(exc: BaseException, url: str) -> str:
    """``DNS lookup failed: no results for hostname lookup: docs.scrapy.org``: the exception's
    own words, led by the host when they do not name it (``127.0.0.1:8080: Connection was
    refused …``), so that a line cut at its end still says where."""
    reason = " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
    host = urlsplit(url).netloc
    if host and host.split(":")[0] not in reason:
        reason = f"{host}: {reason}"
    return reason[:CAUSE_MAX]


def note_error(stats: StatsCollector, cause: str) -> None:
    """Keep ``cause`` if it is the round's first: later ones are mostly its consequences."""
    if not stats.get_value(FIRST_ERROR):
        stats.set_value(FIRST_ERROR, cause[:CAUSE_MAX])


def empty_reason(url: str | None) -> str:
    return f"page parsed to zero rows: {url}"


def note_empty_listing(stats: StatsCollector, url: str) -> None:
    """A listing page (trending, a search page) that parsed to zero rows: a markup change or
    an error page served with status 200."""
    stats.inc_value(EMPTY_LISTINGS)
    if not stats.get_value(EMPTY_LISTING_URL):
        stats.set_value(EMPTY_LISTING_URL, url)
        note_error(stats, empty_reason(url))


def response_classes(stats: dict[str, Any]) -> dict[str, int]:
    """Answers by class (``2xx`` … ``5xx``) and ``failed`` (no answer: DNS, refused, timeout),
    from Scrapy's downloader counters."""
    classes: dict[str, int] = {}
    prefix = "downloader/response_status_count/"
    for key, count in stats.items():
        if key.startswith(prefix) and isinstance(count, int):
            status = key[len(prefix):]
            name = f"{status[:1]}xx" if status[:1].isdigit() else "other"
            classes[name] = classes.get(name, 0) + count
    failed = stats.get("downloader/exception_count", 0)
    if failed:
        classes["failed"] = failed
    return classes


def ok_answers(stats: dict[str, Any]) -> int:
    """Answers that carried data: 2xx, and 304 (a conditional request's "unchanged").

    A robots.txt is no data: a docs round whose pages all failed after the host's robots.txt
    came back 200 fetched nothing, and must say so rather than pass as healthy."""
    return (_ok_count(stats, "downloader/response_status_count/")
            - _ok_count(stats, "robotstxt/response_status_count/"))


def robots_requests(stats: dict[str, Any]) -> int:
    """Downloads of robots.txt, which carry no data (:func:`ok_answers`): a round that sent only
    those — in the cluster, every page it would have taken was taken by others or already
    collected once it had read the host's robots.txt — had nothing to send."""
    return stats.get("robotstxt/request_count", 0)


def _ok_count(stats: dict[str, Any], prefix: str) -> int:
    return sum(count for key, count in stats.items() if key.startswith(prefix)
               and isinstance(count, int) and (key[len(prefix):].startswith("2")
                                               or key.endswith("/304")))


def round_problem(requests: int, ok: int, empty_listing_url: str | None, empty_listings: int,
                  first_error: str | None, robots: int = 0) -> str | None:
    """Why a finished round failed, or None: it sent requests and no answer carried data, or a
    listing page parsed to zero rows. A round with nothing to send (everything already
    collected and unchanged, ``robots`` of its ``requests`` for robots.txt) is not a
    failure."""
    if empty_listings:
        return empty_reason(empty_listing_url)
    if requests > robots and not ok:
        return f"fetched nothing in {counted(requests, 'request')} ({first_error or NO_DATA})"
    return None


def fetched_nothing(stats: dict[str, Any]) -> bool:
    """The round sent requests and no answer carried data (a listing page with zero rows is
    health's ``empty``, said in the summary, but data did come)."""
    return (stats.get("downloader/request_count", 0) > robots_requests(stats)
            and not ok_answers(stats))


def stats_problem(stats: dict[str, Any]) -> str | None:
    """:func:`round_problem` of a round's Scrapy stats."""
    return round_problem(stats.get("downloader/request_count", 0), ok_answers(stats),
                         stats.get(EMPTY_LISTING_URL), stats.get(EMPTY_LISTINGS, 0),
                         stats.get(FIRST_ERROR), robots_requests(stats))
