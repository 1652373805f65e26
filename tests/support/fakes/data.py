"""The recorded pages the fakes serve, by kind (under ``tests/data/``)."""

from __future__ import annotations

from tests.support.paths import DATA

TRENDING_PAGES = DATA / "github" / "trending"
API_EXAMPLES = DATA / "github" / "api"
DOCS_PAGES = DATA / "docs"
