"""``BUDGET_STORAGE`` on one machine: the budget's own store on ``{data_dir}/state/budget.sqlite``
(the rules are :class:`scraper.budget.store.BudgetStore`'s), paced on the machine's steady clock
(:mod:`scraper.budget.clock`), which no wall-clock step moves."""

from __future__ import annotations

import time

from scrapy.crawler import Crawler

from scraper.budget.clock import steady_clock
from scraper.budget.store import BudgetStore, BudgetTiming
from scraper.stores.base import AlwaysUp
from scraper.utils.layout import DataLayout


class SqliteBudgetStorage(AlwaysUp, BudgetStore):
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SqliteBudgetStorage:
        settings = crawler.settings
        path = DataLayout.from_settings(settings).budget_db
        return cls(path, BudgetTiming.from_settings(settings), wall=time.time,
                   clock=steady_clock(path.with_name("budget-clock.json")))
