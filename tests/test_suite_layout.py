"""The suite's own form: in-process tests beside the layer they test (``tests/scraper/docpages/``
for ``scraper/docpages/``), real processes in ``tests/e2e/``, and what tests share in
``tests/support/`` - never in a test module another imports."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import REPO_ROOT

TESTS = REPO_ROOT / "tests"
PROJECT_CHECKS = {"test_docs_site.py", "test_import_cycles.py", "test_benchmarks_smoke.py",
                  "test_fakes.py", "test_suite_layout.py"}
"""At the top: checks of the project as a whole (its docs, layers, benchmarks, fakes, suite)."""


def suite_files() -> list[Path]:
    return [p for p in TESTS.rglob("test_*.py") if "data" not in p.relative_to(TESTS).parts]


def test_no_test_module_is_imported_by_another() -> None:
    imported = []
    for path in TESTS.rglob("*.py"):
        if "data" in path.relative_to(TESTS).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            imported += [f"{path.relative_to(TESTS)}: {name}" for name in names
                         if name.split(".")[-1].startswith("test_")]
    assert imported == []


def test_each_test_file_sits_beside_what_it_tests() -> None:
    misplaced = []
    for path in suite_files():
        folder = path.parent.relative_to(TESTS)
        if folder.parts == ():
            ok = path.name in PROJECT_CHECKS
        elif folder.parts[0] in ("e2e", "support"):
            ok = folder.parts == ("e2e",)
        else:  # tests/scraper/docpages/ mirrors scraper/docpages/
            ok = (REPO_ROOT / folder / "__init__.py").is_file()
        if not ok:
            misplaced.append(str(path.relative_to(TESTS)))
    assert misplaced == []
