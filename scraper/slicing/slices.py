"""Cutting one search query into slices of at most 1000 results each (GitHub's search cap).

A query is split by ``stars:`` ranges first and, inside a star value that alone holds more than
the cap, by ``created:`` ranges. The user's own ``stars:``/``created:`` qualifiers bound the
slicing (GitHub refuses a qualifier given twice, so they are merged, never repeated). Slices
always partition the query's range: every repository falls in exactly one of them, whatever
GitHub adds later, so a plan can be re-used round after round.

Planning is a *sweep*, a generator that yields :class:`Probe` (ask GitHub, send the answer
back) or :class:`Final` (a slice to page through); Scrapy-free so the spider drives it with
its own requests and the budget.

* Stars, from the top: a probe sorted by stars with ``per_page=1&page=1000`` answers the star
  count of the query's 1000th result, ``v``; ``stars:>v`` then holds fewer than 1000 (one
  probe per full slice), and the sweep goes on with ``stars:lo..v``.
* Created, from the oldest: interpolated from the density of the last slice (or the whole
  range), shrunk or grown by the probe's ``total_count``.
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Generator
from dataclasses import dataclass
from datetime import UTC, datetime

RESULTS_CAP = 1000
"""GitHub's search API serves only the first 1000 results of a query."""

TARGET = 900
"""Results a created slice aims for: under the cap with room for the repositories created
before its next round."""

GITHUB_START = calendar.timegm((2007, 10, 1, 0, 0, 0))
"""No public repository was created before GitHub's launch (Oct 2007): the open lower end of a
``created:`` sweep starts here."""

DAY = 86_400
MAX_GROWS = 2
"""Probes spent enlarging a created slice that came back small, before taking it as it is."""

_QUALIFIER_RE = re.compile(r"(?<!\S)(-?)(stars|created):(\S*)")
_INT_RE = re.compile(r"\d+")
_DATE_RE = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)(?:T(\d\d):(\d\d)(?::(\d\d))?(Z|[+-]\d\d:?\d\d)?)?")


class SliceError(ValueError):
    """A query whose ``stars:``/``created:`` qualifiers cannot be sliced within."""


@dataclass(frozen=True, slots=True)
class Range:
    """Inclusive bounds; None is open (stars: from 0; created: from GitHub's start or to now)."""

    lo: int | None = None
    hi: int | None = None

    def single(self) -> bool:
        return self.lo is not None and self.lo == self.hi


def _parse_int(text: str) -> int:
    if not _INT_RE.fullmatch(text):
        raise SliceError(f"{text!r} is not a whole number")
    return int(text)


def _parse_time(text: str, upper: bool) -> int:
    """Epoch seconds of a date or date-time; a bare date is its first or (``upper``) last second."""
    match = _DATE_RE.fullmatch(text)
    if not match:
        raise SliceError(f"{text!r} is not a date (YYYY-MM-DD) or date-time")
    year, month, day, hour, minute, second, zone = match.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0),
                          int(second or 0), tzinfo=UTC)
    except ValueError as exc:
        raise SliceError(f"{text!r}: {exc}") from None
    epoch = calendar.timegm(moment.timetuple())
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        epoch -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    if hour is None and upper:
        epoch += DAY - 1
    elif minute is not None and second is None and upper:
        epoch += 59
    return epoch


def parse_range(name: str, value: str) -> Range:
    """A qualifier value in every form GitHub documents: ``n``, ``>n``, ``>=n``, ``<n``,
    ``<=n``, ``a..b``, ``a..*``, ``*..b`` (for created: dates and date-times)."""
    if name == "stars":
        def low(text: str) -> int:
            return _parse_int(text)
        high = low
    else:
        def low(text: str) -> int:
            return _parse_time(text, upper=False)

        def high(text: str) -> int:
            return _parse_time(text, upper=True)
    if ".." in value:
        a, _, b = value.partition("..")
        return Range(None if a == "*" else low(a), None if b == "*" else high(b))
    for op in (">=", "<=", ">", "<"):
        if value.startswith(op):
            rest = value[len(op):]
            if op == ">=":
                return Range(low(rest), None)
            if op == "<=":
                return Range(None, high(rest))
            if op == ">":
                return Range(high(rest) + 1, None)
            return Range(None, low(rest) - 1)
    return Range(low(value), high(value))


@dataclass(frozen=True, slots=True)
class SlicedQuery:
    """A configured query split into its free part and the range slices are cut within."""

    base: str
    stars: Range
    created: Range | None


def parse_query(query: str) -> SlicedQuery:
    found: dict[str, Range] = {}
    for negated, name, value in _QUALIFIER_RE.findall(query):
        if negated:
            raise SliceError(f"-{name}: cannot slice within a negated qualifier")
        if name in found:
            raise SliceError(f"{name}: given twice (GitHub refuses that)")
        found[name] = parse_range(name, value)
    base = " ".join(_QUALIFIER_RE.sub(" ", query).split())
    stars = found.get("stars", Range())
    if stars.lo is not None and stars.hi is not None and stars.lo > stars.hi:
        raise SliceError(f"stars: empty range {stars.lo}..{stars.hi}")
    return SlicedQuery(base, Range(max(stars.lo or 0, 0), stars.hi), found.get("created"))


@dataclass(frozen=True, slots=True)
class Slice:
    stars: Range
    created: Range | None = None
    capped: bool = False  # holds more than the cap and cannot be cut: its first 1000 only

    def qualifiers(self) -> str:
        parts = [f"stars:{_stars_text(self.stars)}"]
        if self.created is not None:
            parts.append(f"created:{_created_text(self.created)}")
        return " ".join(parts)

    def query(self, base: str) -> str:
        # Qualifiers first: the user's free text stays one piece at the end.
        return f"{self.qualifiers()} {base}".strip()

    def to_json(self) -> list[int | None]:
        created = self.created or Range()
        data = [self.stars.lo, self.stars.hi, created.lo, created.hi,
                0 if self.created is None else 1]
        return [*data, 1] if self.capped else data

    @classmethod
    def from_json(cls, data: list[int | None]) -> Slice:
        s_lo, s_hi, c_lo, c_hi, has_created, *capped = data  # plans before `capped`: 5 long
        return cls(Range(s_lo, s_hi), Range(c_lo, c_hi) if has_created else None,
                   capped=capped == [1])


def _stars_text(r: Range) -> str:
    lo = r.lo or 0
    if r.hi is None:
        return f">={lo}"
    return str(lo) if lo == r.hi else f"{lo}..{r.hi}"


def _time_text(epoch: int, upper: bool) -> str:
    moment = time.gmtime(epoch)
    if (moment.tm_hour, moment.tm_min, moment.tm_sec) == ((23, 59, 59) if upper else (0, 0, 0)):
        return time.strftime("%Y-%m-%d", moment)
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", moment)


def _created_text(r: Range) -> str:
    lo = "*" if r.lo is None else _time_text(r.lo, upper=False)
    hi = "*" if r.hi is None else _time_text(r.hi, upper=True)
    return f"{lo}..{hi}"


# --- sweeps -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Probe:
    """Ask GitHub for ``slice``: its ``total_count`` and, when ``quantile``, the star count of
    its 1000th result by stars."""

    slice: Slice
    quantile: bool = False


@dataclass(frozen=True, slots=True)
class Answer:
    total: int
    top: int | None = None  # the quantile result's stars, None if there was none


@dataclass(frozen=True, slots=True)
class Final:
    """A slice to page through; ``total`` as last counted (None: not counted yet)."""

    slice: Slice
    total: int | None
    splittable: bool = True


Sweep = Generator[Probe | Final, Answer | None, None]


def resplit(piece: Slice, total: int, now: float, cap: int = RESULTS_CAP) -> Sweep:
    """The sweep that cuts ``piece`` (which holds ``total`` > cap results) into slices."""
    if piece.stars.single():
        return split_created(piece.stars, piece.created or Range(), total, now, cap)
    return split_stars(piece.stars, piece.created, total, now, cap)


def split_stars(stars: Range, created: Range | None, total: int | None, now: float,
                cap: int = RESULTS_CAP) -> Sweep:
    lo, hi = stars.lo or 0, stars.hi
    count = total
    while True:
        if count is not None and count <= cap:
            yield Final(Slice(Range(lo, hi), created), count)
            return
        answer = yield Probe(Slice(Range(lo, hi), created), quantile=True)
        assert answer is not None
        if answer.total <= cap:
            count = answer.total
            continue
        top = answer.top
        if top is None or top < lo or (hi is not None and top > hi):
            # GitHub answered no usable 1000th result: page what the cap allows, say so.
            yield Final(Slice(Range(lo, hi), created), answer.total, splittable=False)
            return
        if hi is None or top < hi:
            yield Final(Slice(Range(top + 1, hi), created), None)  # fewer than the cap
            hi, count = top, None
            continue
        # Cap or more repositories have exactly `hi` stars: cut that value by creation date.
        single = Slice(Range(hi, hi), created)
        counted = yield Probe(single)
        assert counted is not None
        yield from split_created(single.stars, created or Range(), counted.total, now, cap)
        if hi == lo:
            return
        hi, count = hi - 1, None


def split_created(stars: Range, created: Range, total: int, now: float,
                  cap: int = RESULTS_CAP) -> Sweep:
    start = created.lo if created.lo is not None else GITHUB_START
    end = created.hi if created.hi is not None else int(now) + DAY
    left, density = total, None
    lower = created.lo  # the first slice keeps the range's own (maybe open) lower end
    # (cut, count) of a range from `start` known to hold more than the cap: a later guess stays
    # under it, and a crowded second is found by halving towards it, never by guessing again.
    over: tuple[int, int] | None = None
    while left > cap:
        span = end - start + 1
        if span <= 1:
            break
        if over is not None and over[0] == start:  # one second holds more than the cap
            cut, count = over
        else:
            cut, count, over = yield from _next_cut(stars, start, end, left, density, over, cap)
        yield Final(Slice(stars, Range(lower, cut)), count, splittable=count <= cap)
        density = max(count, 1) / (cut - start + 1)
        left -= count
        start = lower = cut + 1
        if over is not None:
            over = (over[0], over[1] - count) if over[1] - count > cap else None
    yield Final(Slice(stars, Range(lower, created.hi)), max(left, 0),
                splittable=end - start > 0)


def _next_cut(stars: Range, start: int, end: int, left: int, density: float | None,
              over: tuple[int, int] | None, cap: int
              ) -> Generator[Probe, Answer | None, tuple[int, int, tuple[int, int] | None]]:
    """Probe for the end of the created slice from ``start``: ``(cut, count, over)``."""
    span = end - start + 1
    guess = TARGET / density if density else span * TARGET / left
    cut = start + min(span - 2, max(0, int(guess) - 1))
    if over is not None:
        cut = min(cut, over[0] - 1)
    best: tuple[int, int] | None = None
    grows = 0
    while True:
        answer = yield Probe(Slice(stars, Range(start, cut)))
        assert answer is not None
        count = answer.total
        if count > cap:
            over = (cut, count)
            if best is not None:
                if cut - best[0] <= 1:
                    return (*best, over)
                cut = (best[0] + cut) // 2
            elif cut == start:  # one second holds more than the cap: the finest GitHub has
                return cut, count, over
            else:
                cut = max(start, min(cut - 1, start + int((cut - start + 1) * TARGET / count)))
            continue
        best = (cut, count)
        if count >= TARGET // 3 or cut >= end - 1:
            return (*best, over)
        if over is not None:  # between a small slice and one too big: halve the gap
            if over[0] - cut <= 1:
                return (*best, over)
            cut = (cut + over[0]) // 2
        elif grows >= MAX_GROWS:
            return (*best, over)
        else:
            grows += 1
            cut = min(end - 1, start + int((cut - start + 1) * TARGET / max(count, 1)))
