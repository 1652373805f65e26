"""MkDocs hook: the site's reference pages, generated from the code at every build.

Nothing here is copied from the code: each page is read out of it when the site is built.

- ``reference/configuration.md``: every key of ``collector.yaml``, from the config dataclasses
  (``scraper.config.collector``): the key paths, their defaults, and the meaning each field's
  docstring or comment gives, else the one ``docs/reference/meanings.yml`` gives.
- ``reference/settings.md``: every setting of ``scraper/settings.py`` (read with ``ast``: a
  string right after an assignment is its docstring, ``#`` comments beside or above it count
  too), its default, and the spiders' own values (their ``custom_settings``).
- ``reference/cli.md``: every ``python -m runner`` subcommand and option, from the argparse
  tree (``runner.cli.main.build_parser``).
- ``reference/catalog.md``: the catalog's tables and columns, from ``runner.catalog.schema``,
  which already says what each column means.
- ``reference/items.md``: the item fields, from ``scraper.items``.
- ``changelog.md``: ``CHANGELOG.md`` as it is, so the site and the repository show one file.

A key, setting or item field that has no meaning anywhere, or a meaning in ``meanings.yml``
for something the code no longer has, stops the build (an error, so ``--strict`` or not).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import io
import logging
import re
import sys
import tokenize
from pathlib import Path
from typing import Any

import yaml
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.reference")

DOCS_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = DOCS_DIR.parent
MEANINGS = DOCS_DIR / "reference" / "meanings.yml"

GENERATED = {
    "reference/configuration.md": "config_page",
    "reference/settings.md": "settings_page",
    "reference/cli.md": "cli_page",
    "reference/catalog.md": "catalog_page",
    "reference/items.md": "items_page",
}

# Fields of the config dataclasses that are not keys of the file: what the loader fills in.
NOT_KEYS = {
    ("CollectorConfig", "source"): "the file the config came from",
    ("GitHubConfig", "token"): "read from the variable github.token_env names, never the file",
}
SPIDER_SECTIONS = ("trending", "search", "docs")


def _import(name: str) -> Any:
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    return importlib.import_module(name)


def _meanings() -> dict[str, dict[str, str]]:
    return yaml.safe_load(MEANINGS.read_text(encoding="utf-8")) or {}


def _cell(text: Any) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: Any) -> str:
    text = str(text)
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _seconds(value: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if value >= size and value % size == 0:
            return f"{value / size:g}{unit}"
    return f"{value:g}s"


# --- source comments and docstrings ---------------------------------------------------------


def _comments(source: str) -> dict[int, str]:
    """Line number → the text of the ``#`` comment on it."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string.lstrip("#").strip()
    return found


def _documented(body: list[ast.stmt], source: str) -> dict[str, dict[str, Any]]:
    """Each assignment of ``body`` → its docstring (a string right after it), its trailing
    comment (on its lines) and the comment block right above it."""
    comments = _comments(source)
    lines = source.splitlines()
    out: dict[str, dict[str, Any]] = {}
    section = ""
    last_line = 0
    group = ""
    previous_end = -1
    for index, node in enumerate(body):
        for number in range(last_line + 1, node.lineno):
            text = comments.get(number, "")
            if text.startswith("---"):
                section = text.strip("- ").strip()
        last_line = node.end_lineno or node.lineno
        adjacent = node.lineno == previous_end + 1
        previous_end = last_line
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        elif isinstance(node, ast.AnnAssign):
            target = node.target
        else:
            if not (isinstance(node, ast.Expr) and adjacent):
                group = ""
            continue
        if not isinstance(target, ast.Name):
            continue
        doc = ""
        after = body[index + 1] if index + 1 < len(body) else None
        if (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            doc = inspect.cleandoc(after.value.value)
        trailing = " ".join(comments[n] for n in range(node.lineno, last_line + 1)
                            if n in comments and not lines[n - 1].lstrip().startswith("#"))
        above: list[str] = []
        number = node.lineno - 1
        while number in comments and lines[number - 1].lstrip().startswith("#"):
            if comments[number].startswith("---"):
                break
            above.insert(0, comments[number])
            number -= 1
        above_text = " ".join(above)
        if not above_text and group and re.search(rf"\b{re.escape(target.id)}\b", group):
            above_text = group  # a comment above a group of settings that names this one
        group = (above_text or group) if adjacent else above_text
        out[target.id] = {"doc": doc, "comment": trailing, "above": above_text,
                          "section": section, "node": node}
    return out


def _rst(text: str) -> str:
    """Docstring markup as Markdown: ``x`` → `x`, :class:`x` → `x`."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


# --- configuration keys ---------------------------------------------------------------------


def config_keys() -> list[dict[str, Any]]:
    """Every key of collector.yaml: path, default, the setting that holds its default, and
    the field's own docstring or comment, walked from ``CollectorConfig``."""
    module = _import("scraper.config.collector")
    source = inspect.getsource(module)
    tree = ast.parse(source)
    classes = {node.name: _documented(node.body, source)
               for node in tree.body if isinstance(node, ast.ClassDef)}
    keys: list[dict[str, Any]] = []

    def default_of(field: dataclasses.Field) -> Any:
        if field.default is not dataclasses.MISSING:
            return field.default
        if field.default_factory is not dataclasses.MISSING:
            return field.default_factory()
        return None

    def walk(cls: type, prefix: str) -> None:
        documented = classes.get(cls.__name__, {})
        for field in dataclasses.fields(cls):
            if (cls.__name__, field.name) in NOT_KEYS:
                continue
            if cls.__name__ == "CollectorConfig" and field.name in SPIDER_SECTIONS:
                path = f"spiders.{field.name}"
            else:
                path = f"{prefix}{field.name}"
            value = default_of(field)
            if dataclasses.is_dataclass(value):
                walk(type(value), path + ".")
                continue
            info = documented.get(field.name, {})
            setting = None
            node = info.get("node")
            if isinstance(node, ast.AnnAssign) and node.value is not None:
                for sub in ast.walk(node.value):
                    if (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name)
                            and sub.value.id == "defaults"):
                        setting = sub.attr
            if field.name == "limits":  # resource → RateLimit(limit, window)
                for resource in module.RESOURCES:
                    keys.append({"path": f"{path}.{resource}", "default": None,
                                 "setting": "GITHUB_RATE_LIMITS", "doc": _rst(
                                     (module.RateLimit.__doc__ or "").strip()),
                                 "fields": [f.name for f in dataclasses.fields(module.RateLimit)]})
                continue
            keys.append({"path": path, "default": value, "setting": setting,
                         "doc": _rst(info.get("doc") or info.get("comment") or "")})

    walk(module.CollectorConfig, "")
    top = list(module.TOP_LEVEL_KEYS)
    order = {name: i for i, name in enumerate(top)}
    keys.sort(key=lambda k: order.get(k["path"].split(".")[0], len(top)))
    return keys


def _yaml_value(value: Any) -> str:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, dict) and not value:
        return "{}"
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix(
        "\n...").removesuffix("...").strip()


def _expand(entries: dict[str, Any]) -> dict[str, Any]:
    """``spiders.*.KEY`` → one entry per spider section."""
    out: dict[str, Any] = {}
    for key, value in (entries or {}).items():
        if key.startswith("spiders.*."):
            for spider in SPIDER_SECTIONS:
                out.setdefault(f"spiders.{spider}.{key[len('spiders.*.'):]}", value)
        else:
            out[key] = value
    return out


def config_page() -> str:
    meanings = _meanings()
    curated = _expand(meanings.get("config", {}))
    notes = _expand(meanings.get("config_defaults", {}))
    units = _expand(meanings.get("config_units", {}))
    keys = config_keys()
    paths = {k["path"] for k in keys}
    for name, table in (("config", curated), ("config_defaults", notes), ("config_units", units)):
        stale = sorted(set(table) - paths)
        if stale:
            raise PluginError(f"docs/reference/meanings.yml {name}: config keys the code does "
                              f"not have: {', '.join(stale)}")
    missing = sorted(k["path"] for k in keys if not (curated.get(k["path"]) or k["doc"]))
    if missing:
        raise PluginError(f"config keys with no meaning (give one in scraper.config.collector "
                          f"or docs/reference/meanings.yml): {', '.join(missing)}")
    out = [
        "# Configuration keys",
        "",
        "Generated at every build from the config dataclasses (`scraper.config.collector`): "
        "every key `collector.yaml` takes, and its default, which the dataclass takes from "
        "the setting named beside it ([Settings](settings.md)). Every key is optional. How the "
        "file is found, read and reloaded: [Configuration](../configuration.md); a commented "
        "copy of the defaults is `collector.example.yaml`.",
        "",
        "| key | default | meaning |",
        "|---|---|---|",
    ]
    for key in keys:
        path = key["path"]
        shown = _code(path)
        if "fields" in key:
            shown += f" `{{{', '.join(key['fields'])}}}`"
        value = key["default"]
        if value is None:
            default = notes.get(path, "none")
        elif units.get(path) == "duration" and isinstance(value, float):
            default = f"`{_seconds(value)}`"
        else:
            default = _code(_yaml_value(value))
        if key.get("setting"):
            default += f" ([`{key['setting']}`](settings.md#{key['setting']}))"
        meaning = curated.get(path) or key["doc"]
        out.append(f"| <span id=\"{path}\"></span>{shown} | {_cell(default)} | "
                   f"{_cell(meaning)} |")
    out += ["", "Durations take `90`, `45s`, `30m`, `12h` or `7d`; sizes `2G`, `1536MB`.", ""]
    return "\n".join(out)


# --- settings ---------------------------------------------------------------------------------


def settings_entries() -> list[dict[str, Any]]:
    module = _import("scraper.settings")
    source = Path(module.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    entries = []
    for name, info in _documented(tree.body, source).items():
        if not name.isupper():
            continue
        node = info["node"]
        segment = ast.get_source_segment(source, node.value) if node.value is not None else ""
        entries.append({"name": name, "value": getattr(module, name), "source": segment,
                        "section": info["section"], "doc": _rst(info["doc"]),
                        "comment": _rst(info["comment"]), "above": _rst(info["above"])})
    return entries


def _spider_settings() -> dict[str, dict[str, Any]]:
    """Spider name → its ``custom_settings``, found as Scrapy finds the spiders."""
    from scrapy.settings import Settings
    from scrapy.spiderloader import SpiderLoader

    settings = Settings()
    settings.setmodule(_import("scraper.settings"), priority="project")
    loader = SpiderLoader.from_settings(settings)
    return {name: dict(loader.load(name).custom_settings or {}) for name in loader.list()}


def _short(value: Any, source: str) -> str:
    text = repr(value)
    if source and source != text and len(source) < 60:
        text = f"{source}" + (f" = {value!r}" if isinstance(value, int | float) else "")
    return text


def settings_page() -> str:
    from scrapy.settings import default_settings

    meanings = _meanings().get("settings", {})
    entries = settings_entries()
    names = {e["name"] for e in entries}
    stale = sorted(set(meanings) - names)
    if stale:
        raise PluginError(f"docs/reference/meanings.yml: settings scraper/settings.py does not "
                          f"have: {', '.join(stale)}")
    by_setting = {k["setting"]: k["path"] for k in config_keys() if k.get("setting")}
    per_spider = _spider_settings()
    out = [
        "# Settings",
        "",
        "Generated at every build from `scraper/settings.py`, which holds every default, the "
        "config's included: each setting's value there, what its docstring or comment says, "
        "and, for a setting Scrapy itself has, Scrapy's own default "
        "([Scrapy's settings](https://docs.scrapy.org/en/latest/topics/settings.html)). "
        "`scrapy crawl … -s NAME=VALUE` overrides any of them for one run; "
        "`spiders.<name>.settings` in `collector.yaml` for one spider.",
        "",
    ]
    missing = []
    section = None
    for entry in entries:
        if entry["section"] != section:
            section = entry["section"]
            out += [f"## {section or 'Scrapy project'}", ""]
        name = entry["name"]
        parts = [p for p in (entry["doc"], entry["comment"], entry["above"]) if p]
        if name in by_setting:
            parts.append(f"The default of the config key "
                         f"[`{by_setting[name]}`](configuration.md#{by_setting[name]}), which "
                         "the add-on sets it from.")
        if name in meanings:
            parts.append(meanings[name])
        if hasattr(default_settings, name):
            parts.append(f"Scrapy's own setting; Scrapy's default: "
                         f"{_code(repr(getattr(default_settings, name)))}.")
        if not parts:
            missing.append(name)
        value = entry["value"]
        out.append(f"### `{name}` {{ #{name} }}")
        out.append("")
        text = _short(value, entry["source"])
        if len(text) > 90 or "\n" in text:
            out += ["```python", f"{name} = {entry['source'] or repr(value)}", "```"]
        else:
            out.append(f"Default: {_code(text)}")
        spiders = {spider: values[name] for spider, values in per_spider.items()
                   if name in values}
        if spiders:
            out += ["", "The spiders' own: " + ", ".join(
                f"{spider} {_code(repr(v))}" for spider, v in sorted(spiders.items())) + "."]
        out += ["", "\n\n".join(parts), ""]
    if missing:
        raise PluginError(f"settings with no meaning (a docstring or comment in "
                          f"scraper/settings.py, or docs/reference/meanings.yml): "
                          f"{', '.join(missing)}")
    return "\n".join(out)


# --- the runner's command line ----------------------------------------------------------------


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
                None)


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                name += f" {action.metavar or action.dest.upper()}"
        else:
            name = action.metavar or action.dest
        help_text = (action.help or "").replace("%%", "%")
        if action.choices and "{" not in help_text and not help_text:
            help_text = "one of " + ", ".join(map(str, action.choices))
        elif action.choices and len(list(action.choices)) <= 6:
            help_text = (help_text + "; " if help_text else "") + "one of " + ", ".join(
                map(str, action.choices))
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS) else _code(
            ",".join(default) if isinstance(default, list) else default)
        rows.append(f"| {_code(name)} | {_cell(shown)} | {_cell(help_text)} |")
    return rows


def runner_commands() -> dict[str, argparse.ArgumentParser]:
    parser = _import("runner.cli.main").build_parser()
    sub = _subparsers(parser)
    return dict(sub.choices) if sub else {}


def cli_page() -> str:
    module = _import("runner.cli.main")
    parser = module.build_parser()
    sub = _subparsers(parser)
    helps = {a.dest: a.help for a in sub._choices_actions} if sub else {}
    out = [
        "# `python -m runner`",
        "",
        "Generated at every build from the runner's argparse tree "
        "(`runner.cli.main.build_parser`). Without a subcommand the runner runs the "
        "workers (`run`). Every subcommand takes `--config PATH` before or after its own "
        "options; without it the config is `$COLLECTOR_CONFIG`, else the closest "
        "`collector.yaml` in the working directory or a parent of it, else the built-in "
        "defaults. A mistyped subcommand or option is one line and exit status 2. The runner "
        "and every subcommand also take `-h`, `--help`: the usage and options below.",
        "",
        "| subcommand | what it does |",
        "|---|---|",
    ]
    for name, command in sub.choices.items():
        line = helps.get(name) or (command.description or "").split(". ")[0]
        out.append(f"| [`{name}`](#{name}) | {_cell(line)} |")
    out += ["", "Options of `python -m runner` itself:", "", "| option | default | meaning |",
            "|---|---|---|", *_option_rows(parser), ""]
    for name, command in sub.choices.items():
        usage = " ".join(command.format_usage().split()).removeprefix("usage: ")
        out += [f"## `{name}` {{ #{name} }}", "", helps.get(name) or "", ""]
        if command.description:
            out += [command.description, ""]
        out += ["```text", usage, "```", ""]
        rows = _option_rows(command)
        if rows:
            out += ["| option | default | meaning |", "|---|---|---|", *rows, ""]
    return "\n".join(out)


# --- the catalog ------------------------------------------------------------------------------


def catalog_page() -> str:
    schema = _import("runner.catalog.schema")
    out = [
        "# Catalog tables",
        "",
        "Generated at every build from the catalog's schema (`runner.catalog.schema`), which "
        "holds each table's SQL and what every column means (the viewer's metadata comes from "
        "it too). Times are ISO-8601 UTC. The bookkeeping tables record which files are in and "
        "what each build sampled; every data table depends on the item files only, so a "
        "killed build followed by a re-run gives the same data tables as one clean build.",
        "",
        "| table | kind | one row per |",
        "|---|---|---|",
    ]
    for table in schema.TABLES:
        kind = "view" if table.view else ("data" if table.data else "bookkeeping")
        out.append(f"| [`{table.name}`](#{table.name}) | {kind} | "
                   f"`({', '.join(table.key)})` |")
    out.append("")
    for table in schema.TABLES:
        out += [f"## `{table.name}` {{ #{table.name} }}", "", f"{table.title}.", "",
                "| column | type | meaning |", "|---|---|---|"]
        out += [f"| `{name}` | `{kind}` | {_cell(meaning)} |"
                for name, kind, meaning in table.columns]
        out.append("")
        if table.view:
            out += ["A view:", "", "```sql", table.view, "```", ""]
    return "\n".join(out)


# --- items ------------------------------------------------------------------------------------


def item_classes() -> list[type]:
    import scrapy

    module = _import("scraper.items")
    return [value for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, scrapy.Item)
            and value is not scrapy.Item and value.__module__ == module.__name__]


def items_page() -> str:
    module = _import("scraper.items")
    source = inspect.getsource(module)
    tree = ast.parse(source)
    documented = {node.name: _documented(node.body, source)
                  for node in tree.body if isinstance(node, ast.ClassDef)}
    curated = _meanings().get("items", {})
    classes = item_classes()
    base = module.CollectedItem
    known = {f"{cls.__name__}.{name}" for cls in classes for name in cls.fields} | {
        name for cls in classes for name in cls.fields}
    stale = sorted(set(curated) - known)
    if stale:
        raise PluginError(f"docs/reference/meanings.yml: item fields scraper/items.py does not "
                          f"have: {', '.join(stale)}")
    out = [
        "# Item fields",
        "",
        "Generated at every build from `scraper.items`: every record the spiders write into "
        "`data/items/`, one class per shape. A field marked *content* is part of the "
        "`content_hash` (sha256 over the content fields, as canonical JSON), so the same "
        "content collected again is one item; the others can change without the item "
        "changing.",
        "",
    ]
    missing = []
    for cls in classes:
        doc = inspect.getdoc(cls) if cls.__doc__ else ""
        out += [f"## `{cls.__name__}` {{ #{cls.__name__} }}", ""]
        if doc:
            out += [_rst(doc), ""]
        own = documented.get(cls.__name__, {})
        inherited = [name for name in cls.fields if name not in own]
        if inherited and cls is not base:
            out += ["Also every field of " + ", ".join(
                f"[`{b.__name__}`](#{b.__name__})" for b in cls.__mro__[1:]
                if b in classes and b.fields) + ".", ""]
            if not own:
                continue
        out += ["| field | content | meaning |", "|---|---|---|"]
        for name in own:
            if name not in cls.fields:
                continue
            meta = cls.fields[name]
            info = own[name]
            meaning = (curated.get(f"{cls.__name__}.{name}") or curated.get(name)
                       or _rst(info["comment"] or info["doc"] or ""))
            if not meaning:
                missing.append(f"{cls.__name__}.{name}")
            flag = "yes" if meta.get("content") else ""
            if meta.get("hashed"):
                flag += f" (hashed as `{meta['hashed'].__name__}`)"
            if meta.get("unhashed_when_none"):
                flag += " (left out of the hash while null)"
            out.append(f"| `{name}` | {_cell(flag)} | {_cell(meaning)} |")
        out.append("")
    if missing:
        raise PluginError(f"item fields with no meaning (a comment in scraper/items.py or "
                          f"docs/reference/meanings.yml): {', '.join(missing)}")
    return "\n".join(out)


# --- the hook -----------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    for uri, builder in GENERATED.items():
        content = globals()[builder]()
        files.append(File.generated(config, uri, content=content))
    files.append(File.generated(config, "changelog.md",
                                content=(REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")))
    return files
