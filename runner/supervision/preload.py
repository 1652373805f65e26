"""What the runner does before it forks: everything every worker would do anyway, done once.

Scrapy imports every component its settings name — the ``*_BASE`` middlewares, extensions and
pipelines, disabled ones included (``get_component_priority_dict_with_base`` imports each key to
normalise it): ``remote_control`` brings aiohttp, ``telnet`` brings twisted.conch, the cookies
middleware tldextract, requests and urllib3. Imported in the parent, they are shared
copy-on-write by every worker; imported after the fork, each worker pays for them again, every
round, in memory and CPU.

``scrapy.cmdline.execute`` likewise imports every command module (``scrapy.commands.*`` and
``COMMANDS_MODULE``) just to find ``crawl`` — ``check`` brings unittest, ``shell`` code and
codeop — then reads the installed distributions' metadata twice: the ``scrapy.commands`` entry
points, and the versions it logs at start (``LOG_VERSIONS``). ``importlib.metadata`` caches its
listing of each ``sys.path`` entry, so reading them once here leaves that cache shared.

An ``isinstance(x, Mapping)`` whose answer is not yet cached walks every subclass of ``Mapping``
loaded in the process — aiohttp's, urllib3's, unittest's: over a hundred classes — and records
the answer in each one's cache. Scrapy asks it of every worker's first response
(``Headers.update``), so every worker wrote into a hundred classes spread over the parent's
pages; asked here once, for the built-in types such checks meet, the answers are shared. The
same goes for ``issubclass(obj, ScrapyCommand)``, asked of every class the command modules name.

CPython keeps every interned string in one table, and pathlib interns each component of every
path it parses. A freed string leaves its slot used until the table is rebuilt, and a rebuild
sizes it for three times the strings alive then. After the preload the parent's strings sit
near a size boundary: the paths it builds (status writes, every round's
files) rebuilt the table at twice its size, one step of about 1 MB, hundreds of rounds into a
process meant to stay flat for months. :func:`settle_interned_strings` rebuilds it before the
fork, sized for the strings alive and :data:`INTERN_HEADROOM` more: a later rebuild can keep
that size or shrink it, not grow it, unless the parent came to hold that many more strings.

What each step saves is measured in ``benchmarks/README.md`` ("Imports after the fork").
"""

from __future__ import annotations

import collections.abc
import importlib
import inspect
import pkgutil
import sys
import types

from scrapy.settings import Settings

COMPONENT_DICTS = ("DOWNLOADER_MIDDLEWARES", "SPIDER_MIDDLEWARES", "EXTENSIONS",
                   "ITEM_PIPELINES")
PROJECT_PREFIXES = ("scrapy.", "scraper.", "pipelines.", "spiders.", "twisted.")
COMMAND_PACKAGES = ("scrapy.commands",)
"""Walked by ``scrapy.cmdline`` for commands, before the project's ``COMMANDS_MODULE``."""
COMMAND_ENTRY_POINTS = "scrapy.commands"
ABSTRACT_COLLECTIONS = tuple(
    getattr(collections.abc, name) for name in collections.abc.__all__
    if name not in ("Callable", "Buffer", "ByteString"))
"""The ABCs whose isinstance answers are cached before forking (Callable's are not asked;
ByteString is deprecated)."""
BUILTIN_TYPES: tuple[type, ...] = (
    type(None), bool, int, float, str, bytes, bytearray, tuple, list, dict, set, frozenset,
    type({}.keys()), type({}.values()), type({}.items()),
    type(iter({})), type(iter({}.values())), type(iter({}.items())),
    type(iter(())), type(iter([])), type(iter(set())), type(iter("")), type(iter(b"")),
    types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType,
)
"""What such checks meet in Scrapy's and Twisted's code paths: containers, views, iterators."""


def project_settings(settings_module: str = "scraper.settings") -> Settings:
    """Scrapy's defaults with the project's settings module over them (no environment)."""
    settings = Settings()
    settings.setmodule(settings_module, priority="project")
    return settings


def component_modules(settings_module: str = "scraper.settings") -> list[str]:
    """The modules of every component and class path the project's settings name."""
    settings = project_settings(settings_module)
    paths: list[str] = []
    for key in COMPONENT_DICTS:
        paths += [str(k) for k in (*settings.getdict(f"{key}_BASE"), *settings.getdict(key))]
    for key in ("DOWNLOAD_HANDLERS_BASE", "DOWNLOAD_HANDLERS"):
        paths += [str(v) for v in settings.getdict(key).values() if v]
    for _, value in settings.items():
        if isinstance(value, str) and value.startswith(PROJECT_PREFIXES) and " " not in value:
            paths.append(value)
    modules = [path.rsplit(".", 1)[0] for path in paths if path.count(".") >= 1]
    return list(dict.fromkeys(modules))


def command_modules(settings_module: str = "scraper.settings") -> list[str]:
    """The modules ``scrapy.cmdline`` walks for commands, in the order it walks them."""
    modules: list[str] = []
    own = project_settings(settings_module).get("COMMANDS_MODULE")
    for package in (*COMMAND_PACKAGES, *([own] if own else [])):
        modules.append(package)
        path = getattr(importlib.import_module(package), "__path__", None)
        if path is not None:
            modules += [info.name for info in pkgutil.walk_packages(path, f"{package}.")]
    return modules


def import_all(modules: list[str] | tuple[str, ...]) -> list[str]:
    """Import those that import here (an optional dependency such as botocore may be missing)."""
    found = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:
            continue
        found.append(name)
    return found


def read_distribution_metadata() -> list[tuple[str, str]]:
    """Read the installed distributions' metadata as ``scrapy crawl`` does at start, and return
    the versions Scrapy would log: the runner logs them once, not every worker every round
    (the project's ``LOG_VERSIONS`` is empty)."""
    from importlib.metadata import entry_points

    from scrapy.utils.versions import get_versions

    entry_points(group=COMMAND_ENTRY_POINTS)
    return get_versions()


INTERN_HEADROOM = 1024
"""Interned strings the parent may come to hold beyond those of the preload before the table
must grow (a run adds its config's, slots' and state files' names). More would size the table
past a boundary a later rebuild shrinks it back from."""
INTERN_CHURN = 1 << 17
"""Strings interned and freed at once while the headroom is held: more than the free slots of
a table sized for it, so the last rebuild sees the headroom alive."""


def settle_interned_strings() -> None:
    """Rebuild CPython's interned-string table now, with room for :data:`INTERN_HEADROOM` more
    strings than are alive (see the module's docstring)."""
    headroom = [sys.intern(f"hubcollect-headroom-{number}") for number in range(INTERN_HEADROOM)]
    for number in range(INTERN_CHURN):
        sys.intern(f"hubcollect-churn-{number}")
    del headroom


def cache_abstract_collection_checks() -> None:
    """Answer ``issubclass(t, abc)`` for the built-in types and ``collections.abc``'s ABCs."""
    for abstract in ABSTRACT_COLLECTIONS:
        for kind in BUILTIN_TYPES:
            issubclass(kind, abstract)


def cache_command_class_checks(modules: list[str]) -> None:
    """Answer the ``issubclass(obj, ScrapyCommand)`` that ``scrapy.cmdline`` asks of every class
    in the command modules (:func:`command_modules`)."""
    from scrapy.commands import ScrapyCommand

    for name in modules:
        module = sys.modules.get(name)
        for value in vars(module).values() if module is not None else ():
            if inspect.isclass(value):
                issubclass(value, ScrapyCommand)
