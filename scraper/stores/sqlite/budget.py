"""``BUDGET_STORAGE`` on one machine: the budget's own store on ``{data_dir}/state/budget.sqlite``
(the rules are :class:`scraper.budget.store.BudgetStore`'s)."""

from __future__ import annotations

from scrapy.crawler import Crawler

from scraper.budget.store import BudgetStore, BudgetTiming
from scraper.layout import DataLayout
from scraper.stores.base import AlwaysUp


class SqliteBudgetStorage(AlwaysUp, BudgetStore):
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SqliteBudgetStorage:
        settings = crawler.settings
        return cls(DataLayout.from_settings(settings).budget_db,
                   BudgetTiming.from_settings(settings))
