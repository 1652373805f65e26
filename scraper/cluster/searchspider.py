"""search on the cluster: complete results past the 1000 cap, one plan for every box.

On one machine a query's plan is made and kept by the one worker whose shard holds the query.
Here every worker of every box takes the next entry of the shared queue, so:

* **A slice is an entry, paged by one worker.** The round's seeding (the spider's own
  ``start()``) puts one start entry per slice of the stored plan (the query itself when it has
  none) into Redis. The worker that takes an entry pages that slice to its end itself — its
  next pages, the re-asks of an incomplete answer and, when the slice grew past the cap, the
  probes that cut it stay in that worker (:func:`~scraper.cluster.leases.hand_on`) under
  the entry's lease. The lease is freed when the chain ends; a box killed mid-chain has the
  entry given back after ``DISTRIBUTED_LEASE`` and another worker pages the slice from its first
  page (what the dead box wrote is dropped there by the shared content hashes).
* **New slices go through the round's dupefilter.** The slices a cut settles on are queued for
  any worker, once per round: a cut done again after a box died queues none twice.
* **The plan is edited, not rewritten.** Each worker knows only the slices it paged, so a cut
  changes the stored plan in place: its slice is replaced by the slices it settled on, by
  compare-and-set (``SlicePlanStorage.replace``) against the plan read just before, again if
  another worker's cut came first. Two workers cutting two slices of one query both land; a
  slice already cut by another worker is left as that worker cut it. A cut a probe failed in is
  not written (its slice is cut again next round).

ETags are the cluster's (``ETAG_STORAGE``): a slice page unchanged since any worker last saw
it answers 304, whoever asks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from scrapy import Request
from scrapy.http import Response

from scraper.cluster.leases import hand_on
from scraper.cluster.spider import DistributedSpider
from scraper.slicing.plans import WHOLE, SlicePlanStorage
from scraper.slicing.slices import Slice
from scraper.stores.base import StoreUnavailable

logger = logging.getLogger("scraper.cluster")

PLAN_EDIT_TRIES = 20
"""Compare-and-set attempts for one cut: each failure means another worker's cut landed."""


def cut_plan(plan: list[Slice] | None, cut: str, pieces: list[Slice]) -> list[Slice] | None:
    """``plan`` with slice ``cut`` ("" for the query itself) replaced by ``pieces``, in place;
    None when the plan no longer has that slice (another worker cut it first)."""
    if cut == "":
        return list(pieces) if not plan else None
    keys = [piece.qualifiers() for piece in plan or []]
    if plan is None or cut not in keys:
        return None
    at = keys.index(cut)
    return [*plan[:at], *pieces, *plan[at + 1:]]


def edit_plan(plans: SlicePlanStorage, query: str,
              change: Callable[[list[Slice] | None], list[Slice] | None]) -> list[Slice] | None:
    """Apply ``change`` to the stored plan by compare-and-set, read again after another
    worker's write; the plan written, or None if ``change`` no longer applies or the store is
    away (the next round then cuts again: more probes, nothing lost)."""
    for _ in range(PLAN_EDIT_TRIES):
        try:
            plan = plans.load(query)
            changed = change(plan)
            if changed is None:
                return None
            if plans.replace(query, plan, changed):
                return changed
        except StoreUnavailable:
            return None
    logger.warning("search %r: the plan kept changing under %d edits; left for the next round",
                   query, PLAN_EDIT_TRIES)
    return None


def continues(response: Response, request: Request) -> bool:
    """``request`` goes on with ``response``'s slice (its next page, a re-ask, a probe of its
    cut), rather than starting another one."""
    if request.meta.get("probe") is not None:
        return True
    return request.meta.get("slice") == response.meta.get("slice") and (
        "sweep" in response.meta or not request.meta.get("first")
        or request.url == response.url)


class DistributedSearchSpider(DistributedSpider):
    """search: each slice paged by one worker of the cluster, the plan edited in Redis."""

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        return self._chain(response, super().parse(response, **kwargs))

    def parse_probe(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        return self._chain(response, super().parse_probe(response, **kwargs))

    @staticmethod
    def _chain(response: Response, output: Iterator[Any]) -> Iterator[Any]:
        for element in output:
            if isinstance(element, Request):
                if continues(response, element):
                    element = hand_on(response, element)
                else:  # a new slice: once per round for the cluster
                    element = element.replace(dont_filter=False)
            yield element

    def query_fits(self, state: Any, response: Response) -> None:
        if response.meta.get("planless"):
            edit_plan(self.plans, state.query,
                      lambda plan: WHOLE if plan is None else None)

    def sweep_done(self, state: Any, sweep_id: int) -> None:
        cut, pieces = state.cuts.pop(sweep_id)
        if state.stopped:
            return
        plan = edit_plan(self.plans, state.query,
                         lambda plan: cut_plan(plan, cut, pieces))
        if plan is not None:
            logger.info("search %r: %s cut into %d slices (the plan: %d)", state.query,
                        cut or "the query", len(pieces), len(plan))

