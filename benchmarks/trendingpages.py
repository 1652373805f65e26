"""Trending pages for a generated history: the real 2026 capture, moved on from fetch to fetch.

Every list of the default plan is served as ``tests/data/github/trending/2026-04_python_daily.html``
(674 KB, 20 rows), its repositories renamed per list (so two lists never share a repository)
and its star counts moved on at every fetch, as GitHub's move within an hour: every fetch is a
new page to the archive, which is what the archive stores at the defaults.
The values GitHub makes per request (``content``, ``value`` and CSRF attributes: request ids,
nonces, tokens) are drawn again at every fetch. The rows a fetch shows are returned with its
body, and they are what :func:`scraper.trending.repositories.parse_trending` reads from it
(``tests/test_benchmarks_smoke.py`` checks this).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urljoin

from benchmarks.common import REPO_ROOT
from scraper.trending.repositories import TrendingRow, parse_trending

BASE_PAGE = REPO_ROOT / "tests" / "data" / "github" / "trending" / "2026-04_python_daily.html"
ROW_START = '<article class="Box-row'
PERIOD_WORDS = {"daily": "today", "weekly": "this week", "monthly": "this month"}
HOURS_OF = {"daily": 24, "weekly": 168, "monthly": 720}
ROW_CHANGES_PER_DAY = 4
"""Repositories that enter each list a day (an assumption: GitHub does not say)."""

_STARS_RE = re.compile(r'(/stargazers"[^>]*>.*?</svg>\s*)([\d,]+)', re.S)
_PERIOD_RE = re.compile(r"[\d,]+ stars? (?:today|this week|this month)")
_PER_REQUEST_RE = re.compile(r'((?:content|value|data-[\w-]*csrf[\w-]*)=")'
                             r'(?=[^"]*\d)(?=[^"]*[A-Za-z])([A-Za-z0-9+/=_:-]{16,})(")')
_TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


@dataclass
class Slot:
    """One row of a list: the repository shown there and how its stars move."""

    base: TrendingRow
    generation: int
    entered_h: int  # the hour this repository came onto the list
    per_hour: int  # stars it gains an hour


class TrendingPages:
    """The pages of every list, fetch after fetch; ``page(list, period, hour)`` is one fetch."""

    def __init__(self, seed: int = 36, path: Path = BASE_PAGE, *, tokens: bool = True) -> None:
        """``tokens`` False: the page's own values stay as captured, for a caller that draws
        the per-request ones itself (``tests/support/fakes/perrequest.py``)."""
        self.rng = random.Random(seed)
        text = path.read_text(encoding="utf-8")
        self.rows = parse_trending(text, "https://github.com/trending/python?since=daily")
        first, last = text.find(ROW_START), text.rfind(ROW_START)
        end = text.find("</article>", last) + len("</article>")
        pieces = _token_pieces if tokens else (lambda part: [part])
        self.prefix, self.suffix = pieces(text[:first]), pieces(text[end:])
        blocks = text[first:end].split(ROW_START)[1:]
        self.blocks = [ROW_START + block for block in blocks]
        if len(self.blocks) != len(self.rows):
            raise ValueError(f"{path}: {len(self.blocks)} row blocks, {len(self.rows)} rows")
        self.slots: dict[int, list[Slot]] = {}

    def _slots(self, list_id: int, period: str, hour: int) -> list[Slot]:
        slots = self.slots.get(list_id)
        if slots is None:
            slots = self.slots[list_id] = [
                Slot(row, 0, hour, max(1, row.period_stars // HOURS_OF[period]))
                for row in self.rows]
        if self.rng.random() < ROW_CHANGES_PER_DAY / 24:  # a repository enters, one leaves
            slot = self.rng.choice(slots)
            slot.generation += 1
            slot.entered_h = hour
        return slots

    def page(self, list_id: int, period: str, hour: int, url: str
             ) -> tuple[bytes, list[TrendingRow]]:
        """(body, rows) of list ``list_id`` fetched at ``hour`` of the history."""
        rows, blocks = [], []
        for slot, block in zip(self._slots(list_id, period, hour), self.blocks, strict=True):
            base = slot.base
            # Letters only: a name with a digit would be a token to the archive's earlier form
            # (tests/support/gziparchive.py's VOLATILE_RE).
            name = f"{base.name}-{_letters(list_id)}-{_letters(slot.generation)}"
            age = hour - slot.entered_h
            stars = base.stars + slot.per_hour * age
            period_stars = base.period_stars + slot.per_hour * (age % HOURS_OF[period])
            row = replace(base, rank=len(rows) + 1, full_name=f"{base.owner}/{name}", name=name,
                          url=urljoin(url, f"/{base.owner}/{name}"), stars=stars,
                          period_stars=period_stars)
            rows.append(row)
            blocks.append(self._block(block, base, row, period))
        body = self._per_request(self.prefix) + "".join(blocks) + self._per_request(self.suffix)
        return body.encode("utf-8"), rows

    def _block(self, block: str, base: TrendingRow, row: TrendingRow, period: str) -> str:
        block = block.replace(f"/{base.full_name}", f"/{row.full_name}")
        block = block.replace(f"%2F{base.owner}%2F{base.name}", f"%2F{row.owner}%2F{row.name}")
        block = block.replace(f"\n      {base.name}</a>", f"\n      {row.name}</a>")
        block = _STARS_RE.sub(lambda m: f"{m.group(1)}{row.stars:,}", block, count=1)
        return _PERIOD_RE.sub(f"{row.period_stars:,} stars {PERIOD_WORDS[period]}", block,
                              count=1)

    def _per_request(self, pieces: list[str]) -> str:
        """The text of ``pieces`` (text, token length, text, …) with new tokens."""
        return "".join(piece if i % 2 == 0 else self._token(int(piece))
                       for i, piece in enumerate(pieces))

    def _token(self, length: int) -> str:
        # A letter and a digit first: still a token to the earlier form's VOLATILE_RE.
        return "a1" + "".join(self.rng.choices(_TOKEN_CHARS, k=length - 2))


def _token_pieces(text: str) -> list[str]:
    """``text`` cut around its per-request tokens: text, the token's length, text, …"""
    pieces, at = [], 0
    for match in _PER_REQUEST_RE.finditer(text):
        pieces += [text[at:match.start(2)], str(len(match.group(2)))]
        at = match.end(2)
    return [*pieces, text[at:]]


def _letters(n: int) -> str:
    """``n`` in letters (0 → a, 26 → ba)."""
    out = ""
    while True:
        n, digit = divmod(n, 26)
        out = chr(ord("a") + digit) + out
        if not n:
            return out
