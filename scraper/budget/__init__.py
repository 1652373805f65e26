"""GitHub's rate limits as one budget shared by every worker process on the machine.

:mod:`scraper.budget.store` keeps it (SQLite under ``{data_dir}/state/budget.sqlite``);
:mod:`scraper.budget.limits` reads GitHub's answers (rate headers, limit responses, pause order);
:mod:`scraper.budget.middleware` spends it.
"""

from scraper.budget.limits import (
    RateHeaders,
    identity_for_token,
    identity_label,
    pause_for,
)
from scraper.budget.store import BucketKey, BucketSpec, BudgetStore, Claim, PauseResult, Ticket

__all__ = [
    "BucketKey",
    "BucketSpec",
    "BudgetStore",
    "Claim",
    "PauseResult",
    "RateHeaders",
    "Ticket",
    "identity_for_token",
    "identity_label",
    "pause_for",
]
