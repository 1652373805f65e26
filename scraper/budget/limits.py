"""Reading GitHub's answers: rate-limit headers, "you are limited" responses, how long to wait.

Pure functions only (no store, no Scrapy), so the rules are unit-tested on their own. The wait
follows GitHub's documented order for a 403/429: ``retry-after`` if present; else, if
``x-ratelimit-remaining`` is 0, until ``x-ratelimit-reset``; else at least a minute, doubling
while the limit persists.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the runner's status and catalog read budgets without Scrapy
    from scrapy.settings import BaseSettings

ANONYMOUS = "anonymous"

PRIMARY = "primary"
SECONDARY = "secondary"


def identity_for_token(token: str | None) -> str:
    """Who the budget belongs to: a hash of the token (never the token itself) or anonymous."""
    if not token:
        return ANONYMOUS
    import hashlib  # here: OpenSSL's start-up is ~3 ms of every `status`, which hashes nothing

    return hashlib.sha256(token.encode()).hexdigest()


def settings_identity(settings: BaseSettings) -> str:
    """The identity of the ``GITHUB_TOKEN`` setting (a :class:`scraper.config.collector.Secret`)."""
    token = settings.get("GITHUB_TOKEN")
    return identity_for_token(token.reveal() if token else None)


def identity_label(identity: str) -> str:
    """``token …ab12`` (last 4 hex digits of the hash), ``anonymous`` or a web host."""
    if len(identity) == 64 and all(c in "0123456789abcdef" for c in identity):
        return f"token …{identity[-4:]}"
    return identity


MAX_WAIT = 3600.0 + 60.0
"""``BUDGET_MAX_WAIT``'s default: the longest any answer can make the budget wait. GitHub's
windows are at most an hour, so a reset further away than this (an hour and a minute of slack)
or a longer ``retry-after`` is clamped to it."""
MAX_COUNT = 10_000_000
"""A rate-limit count (limit, remaining, used) above this is not GitHub's (its largest limit is
15,000 an hour) and would overflow the store."""
MAX_EPOCH = 32_503_680_000.0  # the year 3000: a reset past it is not a time
CLOCK_AGREES = 5.0
"""Seconds a server's ``Date`` may differ from the local wall clock before the local clock is
taken to be wrong (stepped) and resets are measured from the server's own time instead."""


def _count(text: Any) -> int | None:
    """A rate-limit count from a header's text or a JSON value; None when it is not one."""
    if isinstance(text, bool):
        return None
    try:
        value = int(text.strip()) if isinstance(text, str) else text
    except ValueError:
        return None
    return value if isinstance(value, int) and 0 <= value <= MAX_COUNT else None


def _epoch(text: Any) -> float | None:
    """Epoch seconds from a header's text or a JSON value; None when not a usable time."""
    if isinstance(text, bool):
        return None
    try:
        value = float(text.strip()) if isinstance(text, str) else float(text)
    except (TypeError, ValueError, OverflowError):
        return None
    return value if math.isfinite(value) and 0 <= value <= MAX_EPOCH else None


def http_date(text: str | None) -> float | None:
    """An HTTP date (``Date``, ``Retry-After``) as epoch seconds; None when unreadable."""
    if not text or not text.strip():
        return None
    from email.utils import parsedate_to_datetime  # here: status and metrics never need it

    try:
        return parsedate_to_datetime(text.strip()).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


@dataclass(frozen=True, slots=True)
class RateHeaders:
    """The ``x-ratelimit-*`` headers of one API answer; None where absent or unreadable.

    ``bad`` names each header that was present but not a usable value (text, negative, out
    of range), with the value: it is ignored, the answer kept."""

    limit: int | None = None
    remaining: int | None = None
    reset: float | None = None  # epoch seconds
    used: int | None = None
    resource: str | None = None
    server_now: float | None = None  # the answer's Date: the server's clock when it answered
    bad: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_values(cls, values: Mapping[str, Any], resource: str | None = None,
                    server_now: float | None = None) -> RateHeaders:
        """From raw values by header suffix (``limit``, ``remaining``, ``reset``, ``used``):
        a header's text or ``GET /rate_limit``'s JSON alike."""
        counts = {name: _count(values.get(name)) for name in ("limit", "remaining", "used")}
        reset = _epoch(values.get("reset"))
        parsed = {**counts, "reset": reset}
        bad = tuple((f"x-ratelimit-{name}", str(values[name])[:40]) for name in parsed
                    if parsed[name] is None and values.get(name) not in (None, ""))
        return cls(limit=counts["limit"] or None, remaining=counts["remaining"], reset=reset,
                   used=counts["used"], resource=resource, server_now=server_now, bad=bad)

    @classmethod
    def parse(cls, get: Callable[[str], str | None]) -> RateHeaders:
        """``get(name)`` returns a header's text or None (case-insensitive lookup)."""
        resource = get("x-ratelimit-resource")
        values = {name: get(f"x-ratelimit-{name}") for name in ("limit", "remaining", "reset",
                                                                  "used")}
        return cls.from_values(values, resource.strip().lower() if resource else None,
                               http_date(get("date")))

    def reset_in(self, wall_now: float) -> float | None:
        """Seconds from now to ``reset``, on the server's clock when the local wall clock
        disagrees with it (a clock stepped back would put every reset an hour further away)."""
        if self.reset is None:
            return None
        now = wall_now
        if self.server_now is not None and abs(self.server_now - wall_now) > CLOCK_AGREES:
            now = self.server_now
        return self.reset - now

    @property
    def complete(self) -> bool:
        """Enough to sync a budget from: how much is left and when it comes back."""
        return self.remaining is not None and self.reset is not None


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds from now: delta-seconds or an HTTP date (RFC 9110)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(min(int(text), MAX_EPOCH))  # clamped to BUDGET_MAX_WAIT by pause_for
    when = http_date(text)
    if when is None:
        return None
    return max(0.0, when - (time.time() if now is None else now))


def limit_kind(status: int, rate: RateHeaders, retry_after: float | None,
               text: str) -> str | None:
    """``primary``/``secondary`` if this answer says "you are rate limited", else None.

    GitHub answers 403 or 429. Primary: ``x-ratelimit-remaining: 0`` or "API rate limit
    exceeded"; secondary: "secondary rate limit" in the body or a ``retry-after``. A 403 without
    any of these is a permission problem, not a limit, and must not pause anything. A bare 429 is
    always a limit (that is what the status means).
    """
    if status not in (403, 429):
        return None
    lowered = text.lower()
    if "secondary rate limit" in lowered or "abuse" in lowered:
        return SECONDARY
    if rate.remaining == 0 or "rate limit" in lowered:
        return PRIMARY
    if retry_after is not None or status == 429:
        return SECONDARY
    return None


@dataclass(frozen=True, slots=True)
class PauseDecision:
    until: float
    why: str
    doubling: float  # the doubling-minute state to keep: 0 unless this pause used it


def pause_for(now: float, kind: str, rate: RateHeaders, retry_after: float | None,
              previous_backoff: float, *, reset_guard: float, backoff_start: float,
              backoff_max: float, max_wait: float = MAX_WAIT) -> PauseDecision:
    """How long every worker waits after a limit answer, in GitHub's documented order."""
    label = "secondary rate limit" if kind == SECONDARY else "primary rate limit"
    if retry_after is not None:
        # A retry-after of 0 still means "limited": wait at least a second, not a busy loop.
        wait = min(max(1.0, retry_after), max_wait)
        clamped = " (clamped: GitHub's windows are at most an hour)" if wait < retry_after else ""
        return PauseDecision(now + wait, f"{label}: retry-after {wait:.0f}s{clamped}", 0.0)
    if rate.remaining == 0 and rate.reset is not None:
        until = min(max(rate.reset + reset_guard, now + 1.0), now + max_wait)
        return PauseDecision(until, f"{label}: remaining 0 until reset", 0.0)
    backoff = backoff_start if previous_backoff <= 0 else min(backoff_max, previous_backoff * 2)
    return PauseDecision(now + min(backoff, max_wait),
                         f"{label}: no retry-after, backing off {backoff:.0f}s", backoff)
