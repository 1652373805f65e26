"""``python -m runner --help`` and each subcommand's ``--help`` name the docs page that explains
it, and that page exists and speaks of the subcommand."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from runner.cli.main import COMMANDS, DOCS_PAGES, build_parser
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT


def subcommand_help(name: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices[name].format_help()


@pytest.mark.parametrize("name", COMMANDS)
def test_each_subcommand_help_names_a_page_that_explains_it(name: str) -> None:
    found = re.search(r"Explained in (docs/[\w-]+\.md)\.", subcommand_help(name))
    assert found, f"{name} --help names no docs page"
    page = ROOT / found.group(1)
    assert page.is_file(), f"{name} --help names {found.group(1)}, which does not exist"
    spelled = "python -m runner" if name == "run" else f"runner {name}"
    assert spelled in page.read_text(encoding="utf-8"), f"{page.name} never shows {spelled}"


def test_every_subcommand_has_a_page() -> None:
    assert sorted(DOCS_PAGES) == sorted(COMMANDS)


def test_the_top_help_points_at_the_docs() -> None:
    shown = subprocess.run([sys.executable, "-m", "runner", "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60, check=True).stdout
    assert "Docs: docs/index.md" in shown
    assert (ROOT / "docs" / "index.md").is_file()
