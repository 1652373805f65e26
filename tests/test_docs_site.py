"""The documentation site: it builds strict, and it names everything the code has.

The site (``mkdocs.yml``, ``docs/``) is built once into a temporary folder with MkDocs' own
build, as ``mkdocs build --strict`` does; its reference pages are generated from the code by
``docs/hooks/reference.py``. The names checked here are read from the code independently of that
hook, so a configuration key, a setting, a ``python -m runner`` subcommand or option, a catalog
column or an item field the code has and the built site lacks fails a test; so does a file,
module or test a page names that the repository lacks.
"""

from __future__ import annotations

import ast
import html
import re
import shlex
from pathlib import Path

import pytest
import yaml

from tests.support.paths import REPO_ROOT

REPO = REPO_ROOT
DOCS = REPO / "docs"
CAPTURED = re.compile(r"Output captured on \d{4}-\d{2}-\d{2}")

mkdocs_config = pytest.importorskip("mkdocs.config", reason="pip install -e '.[docs]'")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Page path → its text (tags stripped, entities decoded), of a strict build."""
    from mkdocs.commands.build import build

    out = tmp_path_factory.mktemp("site")
    config = mkdocs_config.load_config(config_file=str(REPO / "mkdocs.yml"),
                                       site_dir=str(out), strict=True)
    build(config)  # raises on any warning: strict
    pages = {}
    for page in out.rglob("index.html"):
        text = re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8"))
        pages[page.parent.relative_to(out).as_posix()] = html.unescape(text)
    return pages


def _missing(names: set[str], text: str) -> list[str]:
    return sorted(name for name in names if not re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])",
                                                          text))


def test_every_setting_of_the_settings_module_is_in_the_site(site: dict[str, str]) -> None:
    tree = ast.parse((REPO / "scraper" / "settings.py").read_text(encoding="utf-8"))
    names = {target.id for node in tree.body
             for target in (node.targets if isinstance(node, ast.Assign) else
                            [node.target] if isinstance(node, ast.AnnAssign) else [])
             if isinstance(target, ast.Name) and target.id.isupper()}
    assert len(names) > 100
    assert _missing(names, site["reference/settings"]) == []


def _key_paths(value: object, prefix: str = "") -> set[str]:
    if not isinstance(value, dict):
        return set()
    paths = set()
    for key, sub in value.items():
        path = f"{prefix}{key}"
        paths.add(path)
        if key != "settings":
            paths |= _key_paths(sub, path + ".")
    return paths


def _commented_key_paths(text: str) -> set[str]:
    """Full paths of the keys shown commented out (``  # max_round: 20m`` under ``health:`` is
    ``health.max_round``): a commented key is indented as if its ``# `` were not there."""
    paths = set()
    parents: list[tuple[int, str]] = []
    for line in text.splitlines():
        match = re.match(r"^(\s*)(#\s*)?([a-z_]+):(?:\s|$)", line)
        if not match:
            continue
        indent = len(match.group(1)) + (len(match.group(2)) - 2 if match.group(2) else 0)
        while parents and parents[-1][0] >= indent:
            parents.pop()
        path = ".".join([name for _, name in parents] + [match.group(3)])
        if match.group(2):
            paths.add(path)
        parents.append((indent, match.group(3)))
    return paths


def test_every_key_of_the_example_config_is_in_the_site(site: dict[str, str]) -> None:
    text = (REPO / "collector.example.yaml").read_text(encoding="utf-8")
    keys = _key_paths(yaml.safe_load(text))
    commented = _commented_key_paths(text)
    assert {"spiders.docs.start_urls", "health.failed_rounds"} <= keys
    assert {"health.max_round", "redis_url", "notify.webhook_url",
            "spiders.trending.archive_retention", "github.limits.core"} <= commented
    page = site["reference/configuration"]
    leaves = {key for key in keys if not isinstance(_lookup(yaml.safe_load(text), key), dict)}
    assert _missing(leaves, page) == []
    assert _missing(commented, page) == []


def _lookup(data: dict, path: str) -> object:
    for part in path.split("."):
        data = data[part]
    return data


def test_every_config_field_is_a_key_in_the_site(site: dict[str, str]) -> None:
    import dataclasses

    from scraper.config.collector import CollectorConfig

    def fields(cls: type, prefix: str) -> set[str]:
        found = set()
        for field in dataclasses.fields(cls):
            if field.name in ("source", "token"):  # filled in by the loader, not keys
                continue
            name = (f"spiders.{field.name}" if cls is CollectorConfig
                    and field.name in ("trending", "search", "docs") else prefix + field.name)
            default = (field.default_factory() if field.default_factory is not dataclasses.MISSING
                       else field.default)
            found |= (fields(type(default), name + ".") if dataclasses.is_dataclass(default)
                      else {name})
        return found

    keys = fields(CollectorConfig, "")
    assert "autoscale.max_used_cpu_ratio" in keys
    assert _missing(keys, site["reference/configuration"]) == []


def _runner_parser():
    from runner.cli.main import build_parser

    return build_parser()


def _subcommands(parser) -> dict:
    import argparse

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_runner_subcommand_and_option_is_in_the_site(site: dict[str, str]) -> None:
    import argparse

    commands = _subcommands(_runner_parser())
    assert {"run", "status", "catalog", "history"} <= set(commands)
    page = site["reference/cli"]
    assert _missing(set(commands), page) == []
    options = {option for command in commands.values() for action in command._actions
               if action.help != argparse.SUPPRESS for option in action.option_strings
               if option.startswith("--")}
    assert _missing(options, page) == []


def test_every_catalog_table_and_column_is_in_the_site(site: dict[str, str]) -> None:
    from runner.catalog.schema import TABLES

    page = site["reference/catalog"]
    assert _missing({table.name for table in TABLES}, page) == []
    for table in TABLES:
        section = page.split(table.name, 1)[1]
        assert _missing(set(table.column_names), section) == [], table.name


def test_every_item_field_is_in_the_site(site: dict[str, str]) -> None:
    import scrapy

    import scraper.items as items

    fields = {name for value in vars(items).values()
              if isinstance(value, type) and issubclass(value, scrapy.Item)
              for name in value.fields}
    assert {"content_hash", "markdown", "archive_sha256"} <= fields
    assert _missing(fields, site["reference/items"]) == []


def test_what_survives_what_is_one_table_with_its_proofs(site: dict[str, str]) -> None:
    sources = [REPO / "README.md", *DOCS.glob("*.md")]
    holding = [path.name for path in sources
               if "| event | what is guaranteed | proved by |" in path.read_text("utf-8")]
    assert holding == ["crash-safety.md"]
    rows = [line for line in (DOCS / "crash-safety.md").read_text("utf-8").splitlines()
            if line.startswith("| ") and not line.startswith(("| event", "|---"))]
    assert len(rows) > 80
    assert all("test_" in row.rsplit("|", 2)[-2] for row in rows)


PAGES_NAMING_PATHS = [REPO / "README.md", REPO / "benchmarks" / "README.md",
                      *sorted(DOCS.glob("*.md"))]
# A file or folder of the repository: one with an extension or a trailing slash, so that stats
# keys (``docs/too_many_elements``) and log names are not taken for paths.
NAMED_PATH = re.compile(r"(?<![\w./-])((?:scraper|runner|pipelines|spiders|benchmarks|tests|scripts"
                        r"|docs|\.ci)/[\w./-]*?(?:\.\w+|/))(?![\w/-])(?:::(\w+(?:::\w+)*))?")
NAMED_TEST = re.compile(r"(?<![\w/.])(test_\w+\.py)::(\w+(?:::\w+)*)")
NAMED_MODULE = re.compile(r"(?<![\w./-])((?:scraper|runner|pipelines|benchmarks)(?:\.\w+)+)")
NOT_MODULES = {"runner.log", "runner.pid", "runner.redis"}
"""Names shaped like modules that are files the runner writes and a key of ``status --json``."""


def _module_problem(name: str) -> str | None:
    import importlib

    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        where = REPO.joinpath(*parts[:end])
        if where.with_suffix(".py").is_file() or (where / "__init__.py").is_file():
            value = importlib.import_module(".".join(parts[:end]))
            for attribute in parts[end:]:
                if not hasattr(value, attribute):
                    return f"{'.'.join(parts[:end])} has no {'.'.join(parts[end:])}"
                value = getattr(value, attribute)
            return None
    return "no such module"


def _test_problem(path: Path, names: str) -> str | None:
    last = re.escape(names.split("::")[-1])
    if re.search(rf"^\s*(?:async def|def|class) {last}\b", path.read_text("utf-8"), re.M):
        return None
    return f"no {names} in it"


def test_every_path_and_module_the_pages_name_exists() -> None:
    """A file, folder, module or test a page names is where the page says: the code moved
    once (``scraper/config/moved.py``), and a page naming the old place sends a reader nowhere."""
    problems = []
    for page in PAGES_NAMING_PATHS:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{page.relative_to(REPO)}:{number}"
            for match in NAMED_PATH.finditer(line):
                path, tests = match.groups()
                if re.search(r"[{}*<>]|/[A-Z_]+[./]", path):  # a pattern or a placeholder
                    continue
                if not (REPO / path).exists():
                    problems.append(f"{where}: no {path}")
                elif tests and (problem := _test_problem(REPO / path, tests)):
                    problems.append(f"{where}: {path}: {problem}")
            for match in NAMED_TEST.finditer(line):  # a test file by its name, wherever it is
                found = sorted((REPO / "tests").rglob(match.group(1)))
                problem = (f"no tests/**/{match.group(1)}" if len(found) != 1
                           else _test_problem(found[0], match.group(2)))
                if problem:
                    problems.append(f"{where}: {match.group(1)}: {problem}")
            for match in NAMED_MODULE.finditer(line):
                name = match.group(1)
                if name not in NOT_MODULES and (problem := _module_problem(name)):
                    problems.append(f"{where}: {name}: {problem}")
    assert problems == []


def test_readme_is_short_and_its_example_config_is_valid() -> None:
    from scraper.config.collector import parse_config

    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    block = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    assert len(block.strip().splitlines()) == 5
    config = parse_config(block, "README.md", base_dir=REPO)
    defaults = parse_config("", "empty")
    assert config.trending.languages != defaults.trending.languages
    assert config.search.queries != defaults.search.queries
    assert config.docs.start_urls != defaults.docs.start_urls
    assert "pip install -e . && python -m runner" in text
    assert "pip install -e '.[test]' && pytest" in text


def _blocks(text: str):
    """(language, body, the text before it) of every ``` fence."""
    for match in re.finditer(r"^([ \t]*)```(\w*)\n(.*?)^\1```[ \t]*$", text, re.M | re.S):
        yield match.group(2), match.group(3), text[:match.start()]


def _check_command(words: list[str], spiders: set[str], commands: dict) -> str | None:
    if words[:2] == ["scrapy", "crawl"]:
        return None if words[2] in spiders else f"no spider {words[2]}"
    if "-m" in words and words[words.index("-m") + 1:][:1] == ["runner"]:
        args = words[words.index("-m") + 2:]
        if not args or args[0].startswith("-"):
            args = ["run", *args]
        try:
            _runner_parser().parse_args(args)
        except BaseException as exc:
            return f"runner refuses {' '.join(args)}: {exc}"
    return None


def test_every_shell_example_is_checked_or_marked_as_captured() -> None:
    """A block of commands (```sh) is run through the runner's own parser and Scrapy's
    spider list; a block of output is marked with the date it was captured."""
    from scrapy.settings import Settings
    from scrapy.spiderloader import SpiderLoader

    import scraper.settings

    settings = Settings()
    settings.setmodule(scraper.settings)
    spiders = set(SpiderLoader.from_settings(settings).list())
    commands = _subcommands(_runner_parser())
    problems = []
    for path in [REPO / "README.md", *sorted(DOCS.glob("*.md"))]:
        for language, body, before in _blocks(path.read_text(encoding="utf-8")):
            shown_output = any(line.lstrip().startswith("$ ") for line in body.splitlines())
            if language in ("text", "") and shown_output and not CAPTURED.search(before[-300:]):
                problems.append(f"{path.name}: output not marked as captured: "
                                f"{body.splitlines()[0][:60]}")
            if language == "sh":
                for line in body.splitlines():
                    for part in re.split(r"&&|\|\||\||;|>", line.split(" #", 1)[0]):
                        words = shlex.split(part, comments=True)
                        if words and words[0] in ("scrapy", "python", ".venv/bin/python"):
                            problem = _check_command(words, spiders, commands)
                            if problem:
                                problems.append(f"{path.name}: {problem}")
    assert problems == []


def test_changelog_has_dated_entries() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "Keep a Changelog" in text
    dated = re.findall(r"^## \[[^\]]+\] - (\d{4}-\d{2}-\d{2})$", text, re.M)
    assert len(dated) >= 3
    assert dated == sorted(dated, reverse=True)
