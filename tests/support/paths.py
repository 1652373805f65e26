"""Where the repository and the suite's recorded pages are, for every test and fake."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA = REPO_ROOT / "tests" / "data"
"""The recorded pages: inside the repository, so a clone runs its suite with nothing beside it
(``tests/data/README.md`` names each file's source)."""
