"""Item segments alone at the default cadence, quickly: input for tests of the catalog's load.

Writes only the item files (trending page snapshots, search and docs items, in hourly segments
named as the item store names them), nothing else of a data dir, in a few milliseconds an hour.
``tests/e2e/test_catalog.py`` builds catalogs from it. For what the defaults write to disk, all of
it, see :mod:`benchmarks.historywriter` (``python -m benchmarks.history``).
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from benchmarks.catalog import WORDS
from scraper.config.collector import ROUND_INTERVALS, TrendingConfig

HOUR = 3600
START = 1_798_761_600  # 2027-01-01T00:00:00Z
LISTS = TrendingConfig().start_entries()  # 4 languages × 3 periods, any spoken language
TRENDING_SHARDS = 6
ROWS = 25
DOCS_PAGES = 14 * 2000
"""The default docs sites at their page cap: the pages whose content can change."""
DOCS_CHANGED_PER_DAY = DOCS_PAGES // 7 // 10
"""Pages come back after refresh_after (7 days); one in ten has changed (an assumption)."""
SEARCH_REPOS = 8000
"""The default queries' result sets (topic:web-scraping, language:python stars:>5000)."""


def _stamp(epoch: float, ms: bool = False) -> str:
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch))
    return text + (f".{int(epoch % 1 * 1000):03d}Z" if ms else "Z")


def _segment(epoch: float) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(epoch))


class History:
    """Writes each hour's closed segments, as the defaults' rounds would."""

    def __init__(self, items: Path, search_per_hour: int, seed: int = 27) -> None:
        self.items = items
        self.rng = random.Random(seed)
        self.search_per_hour = search_per_hour
        self.hours = 0
        self.bytes = {"trending": 0, "search": 0, "docs": 0}
        self.repos = [f"owner{n % 997}/{self.rng.choice(WORDS)}-{n}" for n in range(3000)]

    def _write(self, spider: str, shard: str, epoch: float, lines: list[str]) -> None:
        if not lines:
            return
        directory = self.items / spider
        directory.mkdir(parents=True, exist_ok=True)
        data = ("\n".join(lines) + "\n").encode()
        slug = shard.replace("/", "of")
        (directory / f"{spider}-{slug}-{_segment(epoch)}.jsonl").write_bytes(data)
        self.bytes[spider] += len(data)

    def _hash(self) -> str:
        return f"{self.rng.getrandbits(256):064x}"

    def snapshot(self, language: str, period: str, spoken: str, epoch: float) -> str:
        # Lists move slowly: most of a list's repositories stay from one hour to the next.
        day = int(epoch // 86400)
        pool = random.Random(f"{language}{period}{spoken}{day}")
        names = pool.sample(self.repos, ROWS + 5)
        rows = []
        for rank, name in enumerate(sorted(names[:ROWS], key=lambda n: self.rng.random()), 1):
            stars = 100 + hash(name) % 50000 + int(epoch - START) // 600
            rows.append({"rank": rank, "full_name": name, "description": f"{name} tool",
                         "language": "Python", "stars": stars, "forks": stars // 10,
                         "period_stars": 500 - rank, "built_by": ["a", "b"]})
        return json.dumps({
            "spider": "trending", "shard": "0/6", "collected_at": _stamp(epoch),
            "content_hash": self._hash(), "observed_at": _stamp(epoch, ms=True),
            "period": period, "trending_language": language or None,
            "spoken_language_code": spoken or None,
            "url": f"https://github.com/trending/{language}?since={period}", "rows": rows})

    def search(self, epoch: float) -> str:
        n = self.rng.randrange(SEARCH_REPOS)
        name = f"owner{n % 997}/{WORDS[n % len(WORDS)]}-{n}"
        return json.dumps({
            "spider": "search", "shard": "0/1", "collected_at": _stamp(epoch),
            "content_hash": self._hash(), "id": n, "full_name": name,
            "html_url": f"https://github.com/{name}", "description": "a repository",
            "language": "Python", "stargazers_count": 5000 + n + int(epoch - START) // 3600,
            "forks_count": n, "open_issues_count": 4, "topics": ["web-scraping"],
            "license": "MIT", "created_at": "2020-01-01T00:00:00Z",
            "updated_at": _stamp(epoch), "pushed_at": _stamp(epoch), "archived": False,
            "query": "topic:web-scraping"})

    def docs(self, epoch: float) -> str:
        page = self.rng.randrange(DOCS_PAGES)
        text = " ".join(self.rng.choice(WORDS) for _ in range(400))
        return json.dumps({
            "spider": "docs", "shard": "0/8", "collected_at": _stamp(epoch),
            "content_hash": self._hash(), "url": f"https://docs.example.org/p/{page}.html",
            "title": f"Page {page}", "headings": ["Intro", "API"],
            "markdown": f"# Page {page}\n\n## Intro\n\n{text}\n", "text": text,
            "canonical_url": None, "lang": "en", "last_modified": None})

    def hour(self) -> None:
        epoch = START + self.hours * HOUR
        every = {name: int(seconds // HOUR) for name, seconds in ROUND_INTERVALS.items()}
        if self.hours % every["trending"] == 0:
            for shard in range(TRENDING_SHARDS):
                mine = LISTS[shard::TRENDING_SHARDS]
                self._write("trending", f"{shard}/{TRENDING_SHARDS}", epoch + shard,
                            [self.snapshot(*entry, epoch + shard) for entry in mine])
        if self.hours % every["search"] == 0:
            self._write("search", "0/1", epoch, [self.search(epoch + k * 0.01)
                                                 for k in range(self.search_per_hour)])
        if self.hours % every["docs"] == 0:
            per_round = DOCS_CHANGED_PER_DAY * every["docs"] // 24
            self._write("docs", "0/1", epoch, [self.docs(epoch) for _ in range(per_round)])
        self.hours += 1
