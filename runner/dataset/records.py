"""Item lines → catalog rows: which record is which, and the checks that keep bad lines out.

A record is told by its fields: a trending page snapshot has ``rows``; otherwise ``spider``
says what it is. A line that is not what its kind needs raises :class:`BadRecord` with the
field and value, so the build can name file, line, field and value in one line.
"""

from __future__ import annotations

import json
from typing import Any


class BadRecord(ValueError):
    """One line the catalog cannot use; the message names the field and what was expected."""


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


def is_page_snapshot(record: dict[str, Any]) -> bool:
    return "rows" in record


def observation_rows(record: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A trending page snapshot → its ``trending_observations`` rows."""
    observed_at = stamp(record, "observed_at")
    period = _field(record, "period", str, "daily, weekly or monthly")
    language = _field(record, "trending_language", str, "a language slug or null",
                      optional=True) or ""
    rows = _field(record, "rows", list, "a list of rows")
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise BadRecord(f"rows[{i}]: {row!r:.60} is not an object")
        try:
            out.append((observed_at, period, language,
                        _field(row, "rank", int, "a rank (integer)"),
                        _field(row, "full_name", str, "owner/name"),
                        _field(row, "stars", int, "an integer", optional=True),
                        _field(row, "forks", int, "an integer", optional=True),
                        _field(row, "period_stars", int, "an integer", optional=True),
                        _field(row, "language", str, "a language name", optional=True),
                        _field(row, "description", str, "text", optional=True)))
        except BadRecord as exc:
            raise BadRecord(f"rows[{i}].{exc}") from None
    return out


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
    """A docs item → (url, content_hash, collected_at, title, markdown, code_blocks,
    code_blocks_exact, version)."""
    return (_field(record, "url", str, "a URL"),
            _field(record, "content_hash", str, "a sha256 hex digest"), stamp(record),
            _field(record, "title", str, "text", optional=True),
            _field(record, "markdown", str, "Markdown text", optional=True),
            _field(record, "code_blocks", int, "an integer", optional=True),
            _field(record, "code_blocks_exact", int, "an integer", optional=True),
            _field(record, "version", str, "a version name", optional=True))
