"""A trending parser broken the way a GitHub markup change breaks one: every row still found,
but the language and the description no longer where the parser looks. Set as
``TRENDING_PARSER`` by the tests that collect with a broken parser, then fix it."""

from __future__ import annotations

import dataclasses
from typing import Any

from scraper.parsers.trending import TrendingRow, parse_trending

PARSER_VERSION = "1"  # the parser did not change; the markup did


def parse_losing_fields(html: str | bytes, base_url: str, **kwargs: Any) -> list[TrendingRow]:
    return [dataclasses.replace(row, language=None, description=None)
            for row in parse_trending(html, base_url, **kwargs)]
