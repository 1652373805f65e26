"""GitHub's rate limits as one budget shared by every worker process on the machine.

:mod:`scraper.budget.store` keeps it (SQLite under ``{data_dir}/state/budget.sqlite``);
:mod:`scraper.budget.limits` reads GitHub's answers (rate headers, limit responses, pause order);
:mod:`scraper.budget.middleware` spends it.
"""

from typing import TYPE_CHECKING, Any

from scraper.budget.limits import (
    RateHeaders,
    identity_for_token,
    identity_label,
    pause_for,
)

if TYPE_CHECKING:
    from scraper.budget.store import (
        BucketKey,
        BucketSpec,
        BudgetStore,
        Claim,
        PauseResult,
        Ticket,
    )

_FROM_STORE = {"BucketKey", "BucketSpec", "BudgetStore", "Claim", "PauseResult", "Ticket"}


def __getattr__(name: str) -> Any:
    # The store (sqlite3, the lock helpers) on first use: ``status`` reads only the labels.
    if name in _FROM_STORE:
        from scraper.budget import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

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
