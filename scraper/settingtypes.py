"""A setting's value checked against the type of its default, before Scrapy starts.

Scrapy reads a setting when a component is built (``getbool``, ``getint`` …), so ``-s
CONCURRENT_REQUESTS=abc`` or a ``spiders.docs.settings`` value of the wrong type would be a
traceback in the worker's log after start-up; here it is one line naming the setting, before.
Only settings whose default is a bool, a number or a dict are checked: anything else (strings,
lists, None) Scrapy takes as given.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import import_module
from typing import Any

PROJECT_SETTINGS = "scraper.settings"


@cache
def _defaults() -> dict[str, Any]:
    from scrapy.settings import default_settings

    values: dict[str, Any] = {}
    for module in (default_settings, import_module(PROJECT_SETTINGS)):
        values.update((k, v) for k, v in vars(module).items() if k.isupper())
    return values


def setting_problem(name: str, value: Any) -> str | None:
    """What ``value`` should be for setting ``name``, or None when Scrapy can read it."""
    # Scrapy only when a config sets Scrapy settings: the commands that read a config
    # without them (catalog, status, watchdog) never import it.
    from scrapy.settings import BaseSettings

    default = _defaults().get(name)
    probe = BaseSettings({name: value})
    try:
        if isinstance(default, bool):
            probe.getbool(name)
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
