"""One trending page read into the records the collector keeps: the same for a page just
fetched (the spider) and for an archived one read again (``python -m runner reparse``), so a
re-parse writes exactly what a spider with that parser would have written."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from typing import Any

from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

from scraper.parsers.trending import TrendingRow
from scraper.stores.archive import ParseProfile

Parser = Callable[..., list[TrendingRow]]


def load_parser(settings: BaseSettings) -> tuple[Parser, str]:
    """``TRENDING_PARSER`` and its version (its module's ``PARSER_VERSION``)."""
    parser = load_object(settings["TRENDING_PARSER"])
    version = getattr(sys.modules[parser.__module__], "PARSER_VERSION", "unversioned")
    return parser, str(version)


def list_key(period: str, language: str, spoken: str) -> str:
    """The list a page is: ``daily|python|en`` (empty parts: all languages, any spoken)."""
    return f"{period}|{language}|{spoken}"


def snapshot_rows(rows: list[TrendingRow]) -> list[dict[str, Any]]:
    return [{"rank": row.rank, "full_name": row.full_name, "description": row.description,
             "language": row.language, "stars": row.stars, "forks": row.forks,
             "period_stars": row.period_stars, "built_by": list(row.built_by)}
            for row in rows]


def parse_profile(rows: list[dict[str, Any]]) -> ParseProfile:
    canonical = json.dumps(rows, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return ParseProfile(
        rows=len(rows),
        with_language=sum(1 for row in rows if row["language"]),
        with_stars=sum(1 for row in rows if row["stars"]),
        with_description=sum(1 for row in rows if row["description"]),
        rows_hash=hashlib.sha256(canonical.encode()).hexdigest())
