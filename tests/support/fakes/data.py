"""Where the suite's recorded pages live: ``tests/data/``, inside the repository, so a clone
runs its suite with nothing beside it (``tests/data/README.md`` names each file's source)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
TRENDING_PAGES = DATA / "github" / "trending"
API_EXAMPLES = DATA / "github" / "api"
DOCS_PAGES = DATA / "docs"
