"""A trending parser broken the way a GitHub markup change breaks one: every row still found,
but the language and the description no longer where the parser looks. Set as
``TRENDING_PARSER`` by the tests that collect with a broken parser, then fix it."""

from __future__ import annotations

import dataclasses
from typing import Any

from scraper.trending.developers import DeveloperRow, parse_developers
from scraper.trending.repositories import TrendingRow, parse_trending
from scraper.utils.bounds import element_count

PARSER_VERSION = "1"  # the parser did not change; the markup did


def parse_losing_fields(html: str | bytes, base_url: str, **kwargs: Any) -> list[TrendingRow]:
    return [dataclasses.replace(row, language=None, description=None)
            for row in parse_trending(html, base_url, **kwargs)]


def parse_developers_losing_fields(html: str | bytes, base_url: str,
                                   **kwargs: Any) -> list[DeveloperRow]:
    """The developer parser after a markup change moved the names and popular repositories."""
    return [dataclasses.replace(row, name=None, repo_full_name=None, repo_description=None)
            for row in parse_developers(html, base_url, **kwargs)]


LARGEST_INPUT: list[int] = []
"""Start tags of every page :func:`parse_recording_size` was handed, in this process."""


def parse_recording_size(html: str | bytes, base_url: str, **kwargs: Any) -> list[TrendingRow]:
    """The real parser, noting how much of a page it was given to parse."""
    text = html.encode() if isinstance(html, str) else html
    LARGEST_INPUT.append(element_count(text))
    return parse_trending(html, base_url, **kwargs)
