"""A setting's value checked against the type of its default, before Scrapy starts.

Scrapy reads a setting when a component is built (``getbool``, ``getint`` …), so ``-s
CONCURRENT_REQUESTS=abc`` or a ``spiders.docs.settings`` value of the wrong type would be a
traceback in the worker's log after start-up; here it is one line naming the setting, before.
Only settings whose default is a bool, a number or a dict have a type to check; the values
each setting of the project may take (ranges, choices) are :mod:`scraper.config.settingrules`'s,
checked here after the type.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import Any

from scraper.config.settingrules import OWNED, RULES

PROJECT_SETTINGS = "scraper.settings"
SCRAPY_DEFAULTS = "scrapy.settings.default_settings"


def _scrapy_defaults() -> dict[str, Any]:
    """Scrapy's defaults (``scrapy.settings.default_settings``). Importing that module imports
    the ``scrapy`` package, whose ``__init__`` loads the whole HTTP stack: more than the whole
    rest of the commands cron runs every minute (status, watchdog, size), which read a config
    too (``python -m benchmarks.commands``). Unless Scrapy is loaded already, they are read
    from the module's source."""
    loaded = sys.modules.get(SCRAPY_DEFAULTS)
    if loaded is not None:
        return vars(loaded)
    package = importlib.util.find_spec("scrapy")
    if package is None or not package.submodule_search_locations:
        return vars(import_module(SCRAPY_DEFAULTS))  # Scrapy's own error, as an import gives
    return defaults_in_source(Path(next(iter(package.submodule_search_locations)), "settings",
                                   "default_settings.py"))


def defaults_in_source(source: Path) -> dict[str, Any]:
    """The values a settings module's top-level assignments give, each evaluated alone and
    without builtins: numbers, flags and dicts come out as the module defines them; what needs
    more (a call, a name it imports) is left out, and none of Scrapy's such is a flag, a number
    or a dict (tests/e2e/test_config.py holds it to Scrapy's module)."""
    values: dict[str, Any] = {}
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        expression = compile(ast.Expression(value), str(source), "eval")
        try:
            values[target.id] = eval(expression, {"__builtins__": {}}, values)
        except Exception:  # a call, or a name the module imports
            continue
    return values


@cache
def _defaults() -> dict[str, Any]:
    values: dict[str, Any] = {}
    for namespace in (_scrapy_defaults(), vars(import_module(PROJECT_SETTINGS))):
        values.update((k, v) for k, v in namespace.items() if k.isupper())
    return values


def setting_default(name: str) -> Any:
    """The default of setting ``name``: the project's (``scraper/settings.py``) over Scrapy's;
    None for a name neither defines."""
    return _defaults().get(name)


def _readable_bool(name: str, value: Any) -> None:
    """Raise ValueError or TypeError where Scrapy's ``getbool`` would. A value that is not text
    is what ``getbool`` tries first, ``bool(int(value))``; only text needs Scrapy's own rules
    (``'true'``, ``'False'`` …), and text comes from ``-s`` where Scrapy runs anyway."""
    if not isinstance(value, str):
        bool(int(value))
        return
    from scrapy.settings import BaseSettings

    BaseSettings({name: value}).getbool(name)


def owned_setting(name: str) -> str | None:
    """What to do instead of giving setting ``name`` (one collector.yaml or the environment
    sets), or None for a setting one may give."""
    instead = OWNED.get(name)
    return f"not a setting to give; {instead}" if instead else None


def setting_problem(name: str, value: Any) -> str | None:
    """What ``value`` should be for setting ``name`` (the words after "is not"), or None when
    Scrapy can read it and its rule takes it."""
    default = setting_default(name)
    problem = _type_problem(default, name, value)
    rule = RULES.get(name)
    if problem is None and rule is not None and not rule.accepts(value):
        shown = _shown(default)
        problem = rule.expected + (f" (default {shown})" if shown else "")
    return problem


def _shown(default: Any) -> str | None:
    """A default short enough to say in the line; None for none or a long one (a list of
    URLs, a mapping of components), which scraper/settings.py shows."""
    if default is None or isinstance(default, dict | list):
        return None
    shown = repr(default) if isinstance(default, str) else str(default)
    return shown if len(shown) <= 40 else None


def _type_problem(default: Any, name: str, value: Any) -> str | None:
    try:
        if isinstance(default, bool):
            _readable_bool(name, value)
        elif isinstance(default, int | float):
            if isinstance(value, bool):
                raise ValueError
            float(value)
        elif (isinstance(default, dict) and isinstance(value, str)
              and not isinstance(json.loads(value), dict)):
            raise ValueError
    except (ValueError, TypeError):
        return _expected(default)
    return None


def _expected(default: Any) -> str:
    if isinstance(default, bool):
        return f"1 or 0 (true/false; default {int(default)})"
    if isinstance(default, dict):
        return "a JSON object such as {\"key\": 1}"
    return f"a number (default {default})"
