"""Reading GitHub's answers: rate-limit headers, "you are limited" responses, how long to wait.

Pure functions only (no store, no Scrapy), so the rules are unit-tested on their own. The wait
follows GitHub's documented order for a 403/429: ``retry-after`` if present; else, if
``x-ratelimit-remaining`` is 0, until ``x-ratelimit-reset``; else at least a minute, doubling
while the limit persists.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from scrapy.settings import BaseSettings

ANONYMOUS = "anonymous"

PRIMARY = "primary"
SECONDARY = "secondary"


def identity_for_token(token: str | None) -> str:
    """Who the budget belongs to: a hash of the token (never the token itself) or anonymous."""
    if not token:
        return ANONYMOUS
    return hashlib.sha256(token.encode()).hexdigest()


def settings_identity(settings: BaseSettings) -> str:
    """The identity of the ``GITHUB_TOKEN`` setting (a :class:`scraper.config.Secret`)."""
    token = settings.get("GITHUB_TOKEN")
    return identity_for_token(token.reveal() if token else None)


def identity_label(identity: str) -> str:
    """``token …ab12`` (last 4 hex digits of the hash), ``anonymous`` or a web host."""
    if len(identity) == 64 and all(c in "0123456789abcdef" for c in identity):
        return f"token …{identity[-4:]}"
    return identity


def _int(value: str | None) -> int | None:
    try:
        return int(value.strip()) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class RateHeaders:
    """The ``x-ratelimit-*`` headers of one API answer; None where absent or unreadable."""

    limit: int | None = None
    remaining: int | None = None
    reset: float | None = None  # epoch seconds
    used: int | None = None
    resource: str | None = None

    @classmethod
    def parse(cls, get: Callable[[str], str | None]) -> RateHeaders:
        """``get(name)`` returns a header's text or None (case-insensitive lookup)."""
        reset = _int(get("x-ratelimit-reset"))
        resource = get("x-ratelimit-resource")
        return cls(
            limit=_int(get("x-ratelimit-limit")),
            remaining=_int(get("x-ratelimit-remaining")),
            reset=float(reset) if reset is not None else None,
            used=_int(get("x-ratelimit-used")),
            resource=resource.strip().lower() if resource else None,
        )

    @property
    def complete(self) -> bool:
        """Enough to sync a budget from: how much is left and when it comes back."""
        return self.remaining is not None and self.reset is not None


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds from now: delta-seconds or an HTTP date (RFC 9110)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    seconds = _int(text)
    if seconds is not None:
        return float(max(0, seconds))
    try:
        when = parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
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
              backoff_max: float) -> PauseDecision:
    """How long every worker waits after a limit answer, in GitHub's documented order."""
    label = "secondary rate limit" if kind == SECONDARY else "primary rate limit"
    if retry_after is not None:
        # A retry-after of 0 still means "limited": wait at least a second, not a busy loop.
        wait = max(1.0, retry_after)
        return PauseDecision(now + wait, f"{label}: retry-after {wait:.0f}s", 0.0)
    if rate.remaining == 0 and rate.reset is not None:
        until = max(rate.reset + reset_guard, now + 1.0)
        return PauseDecision(until, f"{label}: remaining 0 until reset", 0.0)
    backoff = backoff_start if previous_backoff <= 0 else min(backoff_max, previous_backoff * 2)
    return PauseDecision(now + backoff, f"{label}: no retry-after, backing off {backoff:.0f}s",
                         backoff)
