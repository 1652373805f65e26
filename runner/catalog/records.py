"""Item lines → catalog rows: which record is which, and the checks that keep bad lines out.

A record is told by its fields: a trending page snapshot has ``rows``; otherwise ``spider``
says what it is. A line that is not what its kind needs raises :class:`BadRecord` with the
field and value, so the build can name file, line, field and value in one line.
"""

from __future__ import annotations

import json
import re
from typing import Any

from scraper.docpages.fidelityrecord import FIELDS as FIDELITY_FIELDS


class BadRecord(ValueError):
    """One line the catalog cannot use; the message names the field and what was expected."""


_SURROGATE = re.compile("[\ud800-\udfff]")
"""In a str ``json.loads`` made, every surrogate is a lone one: it joins the valid pairs."""

INT64 = (-(2**63), 2**63 - 1)
"""SQLite's integers: a larger one cannot be stored (and failed every later build)."""


def _int64(text: str) -> int:
    value = int(text)
    if not INT64[0] <= value <= INT64[1]:
        raise BadRecord(f"(number): {text[:40]} is beyond a 64-bit integer")
    return value


def _no_constant(name: str) -> Any:
    raise BadRecord(f"(number): {name} is not a number JSON allows")


def parse_line(text: str) -> Any:
    """``json.loads`` of one item line, refusing what JSON and SQLite cannot hold: ``NaN``,
    ``Infinity`` (Python writes them, ``JSON.parse`` rejects them), integers past 64 bits and
    a lone surrogate (``"\\ud800"``: no UTF-8 holds it; SQLite failed the group on it)."""
    record = json.loads(text, parse_int=_int64, parse_constant=_no_constant)
    if ("\\ud" in text or "\\uD" in text) and _lone_surrogate(record):
        raise BadRecord("(text): holds a lone surrogate (half a UTF-16 pair), which UTF-8 and "
                        "SQLite cannot hold")
    return record


def _lone_surrogate(value: Any) -> bool:
    """Whether a string in ``value`` holds one, looked for without recursion."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, str):
            if not current.isascii() and _SURROGATE.search(current):
                return True
        elif isinstance(current, dict):
            stack.extend(current)
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return False


def _field(record: dict[str, Any], name: str, kind: type | tuple[type, ...],
           expected: str, *, optional: bool = False) -> Any:
    value = record.get(name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, kind):
        raise BadRecord(f"{name}: {value!r:.60} is not {expected}")
    return value


def stamp(record: dict[str, Any], name: str = "collected_at") -> str:
    value = _field(record, name, str, "an ISO-8601 UTC time such as 2026-11-29T15:01:02Z")
    if len(value) < 20 or value[10] != "T" or not value.endswith("Z"):
        raise BadRecord(f"{name}: {value!r:.60} is not an ISO-8601 UTC time such as "
                        "2026-11-29T15:01:02Z")
    return value


def _snapshot_of(record: dict[str, Any]) -> tuple[str, str, str, str]:
    """(period, trending_language or '', observed_at, parsed_at) of a page snapshot."""
    observed_at = stamp(record, "observed_at")
    # Snapshots of earlier versions name no parse: read when fetched.
    parsed_at = stamp(record, "parsed_at") if record.get("parsed_at") is not None \
        else observed_at
    period = _field(record, "period", str, "daily, weekly or monthly")
    language = _field(record, "trending_language", str, "a language slug or null",
                      optional=True) or ""
    return period, language, observed_at, parsed_at


def is_page_snapshot(record: dict[str, Any]) -> bool:
    return "rows" in record


def page_snapshot(record: dict[str, Any]) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
    """A trending page snapshot → ((period, trending_language, spoken_language_code,
    observed_at, parsed_at), its rows as ``runner.catalog.trendingsnapshots.ROW_COLUMNS``
    tuples)."""
    period, language, observed_at, parsed_at = _snapshot_of(record)
    spoken = _field(record, "spoken_language_code", str, "a spoken language code or null",
                    optional=True) or ""
    rows = _field(record, "rows", list, "a list of rows")
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise BadRecord(f"rows[{i}]: {row!r:.60} is not an object")
        try:
            out.append((_field(row, "rank", int, "a rank (integer)"),
                        _field(row, "full_name", str, "owner/name"),
                        _field(row, "stars", int, "an integer", optional=True),
                        _field(row, "forks", int, "an integer", optional=True),
                        _field(row, "period_stars", int, "an integer", optional=True),
                        _field(row, "language", str, "a language name", optional=True),
                        _field(row, "description", str, "text", optional=True)))
        except BadRecord as exc:
            raise BadRecord(f"rows[{i}].{exc}") from None
    out.sort()
    return (period, language, spoken, observed_at, parsed_at), out


def is_developer_snapshot(record: dict[str, Any]) -> bool:
    return "developers" in record


def developer_snapshot(record: dict[str, Any]
                       ) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
    """A trending developers page snapshot → ((period, trending_language, observed_at,
    parsed_at), its rows as ``runner.catalog.trendingsnapshots.DEVELOPER_ROW_COLUMNS`` tuples)."""
    period, language, observed_at, parsed_at = _snapshot_of(record)
    rows = _field(record, "developers", list, "a list of rows")
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise BadRecord(f"developers[{i}]: {row!r:.60} is not an object")
        try:
            out.append((_field(row, "rank", int, "a rank (integer)"),
                        _field(row, "login", str, "a login"),
                        *(_field(row, name, str, "text", optional=True) for name in
                          ("name", "repo_full_name", "repo_description", "avatar_url"))))
        except BadRecord as exc:
            raise BadRecord(f"developers[{i}].{exc}") from None
    out.sort()
    return (period, language, observed_at, parsed_at), out


def search_row(record: dict[str, Any]) -> tuple[Any, ...]:
    """A search item → (id, collected_at, full_name, description, language, stargazers_count,
    forks_count, topics, license, created_at, pushed_at, archived)."""
    topics = _field(record, "topics", list, "a list of topics", optional=True)
    archived = record.get("archived")
    return (_field(record, "id", int, "a repository id (integer)"), stamp(record),
            _field(record, "full_name", str, "owner/name"),
            _field(record, "description", str, "text", optional=True),
            _field(record, "language", str, "a language name", optional=True),
            _field(record, "stargazers_count", int, "an integer", optional=True),
            _field(record, "forks_count", int, "an integer", optional=True),
            json.dumps(topics, ensure_ascii=False) if topics is not None else None,
            _field(record, "license", str, "an SPDX id", optional=True),
            _field(record, "created_at", str, "a time", optional=True),
            _field(record, "pushed_at", str, "a time", optional=True),
            None if archived is None else int(bool(archived)))


def docs_row(record: dict[str, Any]) -> tuple[Any, ...]:
    """A docs item → (url, content_hash, collected_at, title, markdown, version, then its
    fidelity counts in FIDELITY_FIELDS' order; None for a count an older item lacks)."""
    return (_field(record, "url", str, "a URL"),
            _field(record, "content_hash", str, "a sha256 hex digest"), stamp(record),
            _field(record, "title", str, "text", optional=True),
            _field(record, "markdown", str, "Markdown text", optional=True),
            _field(record, "version", str, "a version name", optional=True),
            *(_field(record, name, int, "an integer", optional=True)
              for name in FIDELITY_FIELDS))
