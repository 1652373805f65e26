"""Shards: ``-a shard=i/N`` takes entries i, i+N, i+2N, … of a spider's start list."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

T = TypeVar("T")

_SHARD_RE = re.compile(r"([0-9]+)/([0-9]+)")  # ASCII digits only (\d takes any script's)


class ShardError(ValueError):
    """A ``shard=`` value that is not ``i/N`` with 0 ≤ i < N."""


@dataclass(frozen=True, slots=True, order=True)
class Shard:
    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = _SHARD_RE.fullmatch(text.strip()) if isinstance(text, str) else None
        if match:
            try:
                index, count = int(match.group(1)), int(match.group(2))
            except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
                index, count = 0, 0
            if count > 0 and index < count:
                return cls(index, count)
        raise ShardError(
            f"shard={text!r} is not valid: expected i/N with N ≥ 1 and 0 ≤ i < N, e.g. 0/4"
        )

    def select(self, entries: Sequence[T]) -> list[T]:
        """This shard's part of ``entries``, by index modulo."""
        return list(entries[self.index :: self.count])

    @property
    def slug(self) -> str:
        """File-name form, ``1of4``: no slash, sorts by shard within a spider."""
        return f"{self.index}of{self.count}"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


UNSHARDED = Shard(0, 1)


@runtime_checkable
class ShardedSpider(Protocol):
    """A spider that runs one shard of its start list: every collector spider (spiders/base.py)."""

    name: str
    shard: Shard


def sharded_spider(crawler: Crawler) -> ShardedSpider:
    """The crawler's spider, for a component that names its files and records by the shard.
    Scrapy sets ``crawler.spider`` before any ``spider_opened`` handler runs."""
    spider = crawler.spider
    if not isinstance(spider, ShardedSpider):
        raise TypeError(f"{type(spider).__name__} is not a collector spider: "
                        "it needs a name and a shard (subclass spiders.base.CollectorSpider)")
    return spider
