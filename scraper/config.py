"""The collector's one configuration object, read from one YAML file and validated on load.

Where the file comes from: ``--config PATH`` (runner commands), else the ``COLLECTOR_CONFIG``
environment variable, else ``./collector.yaml``, else the built-in defaults, which collect from
the real GitHub, so the collector runs with no file at all.

Every problem is one line naming the file, the key path, the value and what is allowed::

    collector.yaml: spiders.trending.periods[1]: 'hourly' is not one of daily, weekly, monthly
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

import yaml

from scraper.units import DURATION_HELP, SIZE_HELP, parse_duration, parse_size

CONFIG_ENV = "COLLECTOR_CONFIG"
"""Environment variable naming the config file; the runner sets it for every worker it forks."""

DEFAULT_CONFIG_FILE = "collector.yaml"

SPIDER_NAMES = ("trending", "search", "docs")
PERIODS = ("daily", "weekly", "monthly")
SEARCH_SORTS = ("stars", "forks", "help-wanted-issues", "updated")
RESOURCES = ("core", "search")

TOP_LEVEL_KEYS = (
    "data_dir", "github", "spiders", "round_interval", "stop_timeout", "memory_budget",
    "logs_keep_days", "notify", "redis_url",
)

_LANGUAGE_RE = re.compile(r"^[A-Za-z0-9%+._-]*$")
_SETTING_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ConfigError(Exception):
    """A configuration problem, already phrased as the one line the user sees."""


@dataclass(frozen=True, slots=True)
class RateLimit:
    """A first guess at one GitHub rate limit; response headers replace it once seen."""

    limit: int
    window: float  # seconds


# GitHub's documented primary limits (REST API docs, "Rate limits for the REST API").
TOKEN_LIMITS = {"core": RateLimit(5000, 3600), "search": RateLimit(30, 60)}
ANONYMOUS_LIMITS = {"core": RateLimit(60, 3600), "search": RateLimit(10, 60)}


@dataclass(frozen=True, slots=True)
class GitHubConfig:
    web_url: str = "https://github.com"
    api_url: str = "https://api.github.com"
    token_env: str = "GITHUB_TOKEN"
    web_min_interval: float = 2.0
    limits: Mapping[str, RateLimit] = field(default_factory=dict)

    def token(self) -> str | None:
        """The token from the environment, or None (anonymous). Never stored on the object."""
        return os.environ.get(self.token_env) or None

    def first_guess_limits(self) -> dict[str, RateLimit]:
        base = TOKEN_LIMITS if self.token() else ANONYMOUS_LIMITS
        return {**base, **self.limits}


@dataclass(frozen=True, slots=True)
class TrendingConfig:
    weight: int = 1
    languages: tuple[str, ...] = ("", "python", "rust", "go")
    periods: tuple[str, ...] = PERIODS
    settings: Mapping[str, Any] = field(default_factory=dict)

    def start_entries(self) -> list[tuple[str, str]]:
        """(language, period) pairs: languages × periods, in config order."""
        return [(language, period) for language in self.languages for period in self.periods]


@dataclass(frozen=True, slots=True)
class SearchConfig:
    weight: int = 1
    queries: tuple[str, ...] = ("topic:web-scraping", "language:python stars:>5000")
    sort: str = "stars"
    per_page: int = 100
    settings: Mapping[str, Any] = field(default_factory=dict)

    def start_entries(self) -> list[str]:
        return list(self.queries)


@dataclass(frozen=True, slots=True)
class DocsConfig:
    weight: int = 2
    start_urls: tuple[str, ...] = (
        "https://docs.scrapy.org/en/latest/",
        "https://docs.python.org/3/library/",
    )
    max_pages_per_site: int = 2000
    refresh_after: float = 7 * 86400.0
    settings: Mapping[str, Any] = field(default_factory=dict)

    def start_entries(self) -> list[str]:
        return list(self.start_urls)


@dataclass(frozen=True, slots=True)
class NotifyConfig:
    webhook_url: str | None = None


SpiderConfig = TrendingConfig | SearchConfig | DocsConfig


@dataclass(frozen=True, slots=True)
class CollectorConfig:
    """Everything the user can configure; built only through :func:`load_config`."""

    data_dir: Path = Path("data")
    github: GitHubConfig = field(default_factory=GitHubConfig)
    trending: TrendingConfig = field(default_factory=TrendingConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    docs: DocsConfig = field(default_factory=DocsConfig)
    round_interval: float = 60.0
    stop_timeout: float = 20.0
    memory_budget: int | None = None
    logs_keep_days: int = 14
    notify: NotifyConfig = field(default_factory=NotifyConfig)
    redis_url: str | None = None
    source: str | None = None  # the file it came from, None for the built-in defaults

    def spider(self, name: str) -> SpiderConfig:
        if name not in SPIDER_NAMES:
            raise KeyError(name)
        return getattr(self, name)


# --- loading ----------------------------------------------------------------------------------


def resolve_config_path(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The file to read: explicit path, else $COLLECTOR_CONFIG, else ./collector.yaml if present."""
    if explicit:
        return Path(explicit)
    from_env = os.environ.get(CONFIG_ENV)
    if from_env:
        return Path(from_env)
    default = Path(DEFAULT_CONFIG_FILE)
    return default if default.exists() else None


_cache: dict[tuple[str, float], CollectorConfig] = {}


def load_config(explicit: str | os.PathLike[str] | None = None) -> CollectorConfig:
    """Read and validate the configuration; raises :class:`ConfigError` with a one-line message."""
    path = resolve_config_path(explicit)
    if path is None:
        return CollectorConfig(data_dir=Path("data").absolute())
    label = str(path)
    try:
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        via = "" if explicit else f" (named by ${CONFIG_ENV})"
        raise ConfigError(f"{label}: no such file{via}") from None
    except OSError as exc:
        raise ConfigError(f"{label}: cannot read: {exc.strerror}") from None
    key = (str(path.absolute()), mtime)
    if key not in _cache:
        _cache[key] = parse_config(_read_text(path), label, base_dir=path.absolute().parent)
    return _cache[key]


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def parse_config(text: str, label: str, base_dir: Path | None = None) -> CollectorConfig:
    """Validate YAML ``text``; ``label`` names the file, ``base_dir`` anchors data_dir."""
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(f"{label}: {where}invalid YAML: {_one_line(exc.problem)}") from None
    except yaml.YAMLError as exc:  # e.g. ReaderError (a control character), several lines
        raise ConfigError(f"{label}: invalid YAML: {_one_line(exc)}") from None
    if data is None:
        data = {}
    return _build(_Reader(label), data, base_dir or Path.cwd(), label)


# --- validation ---------------------------------------------------------------------------------


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if not key.isprintable():  # a newline or control character must not break the line
        key = repr(key)
    return f"{path}.{key}" if path else key


class _Reader:
    """Typed accessors that turn any mismatch into a :class:`ConfigError` naming the key path."""

    def __init__(self, label: str) -> None:
        self.label = label

    def fail(self, path: str, message: str) -> NoReturn:
        raise ConfigError(f"{self.label}: {path or '(top level)'}: {message}")

    def bad(self, path: str, value: Any, expected: str) -> NoReturn:
        self.fail(path, f"{_short_repr(value)} is not {expected}")

    def mapping(self, path: str, value: Any, allowed: tuple[str, ...] | None) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.bad(path, value, "a mapping of keys")
        for key in value:
            if not isinstance(key, str):
                self.bad(_join(path, str(key)), key, "a key name (text)")
            if allowed is not None and key not in allowed:
                self.fail(_join(path, key), f"unknown key; expected one of {', '.join(allowed)}")
        return value

    def integer(self, path: str, value: Any, minimum: int, maximum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.bad(path, value, _int_range(minimum, maximum))
        if value < minimum or (maximum is not None and value > maximum):
            self.bad(path, value, _int_range(minimum, maximum))
        return value

    def number(self, path: str, value: Any, minimum: float) -> float:
        if (isinstance(value, bool) or not isinstance(value, int | float)
                or not math.isfinite(value) or value < minimum):
            self.bad(path, value, f"a number ≥ {minimum:g}")
        return float(value)

    def duration(self, path: str, value: Any) -> float:
        try:
            return parse_duration(value)
        except (ValueError, TypeError):
            self.bad(path, value, DURATION_HELP)

    def size(self, path: str, value: Any) -> int:
        try:
            size = parse_size(value)
        except (ValueError, TypeError):
            self.bad(path, value, SIZE_HELP)
        if size <= 0:
            self.bad(path, value, SIZE_HELP)
        return size

    def text(self, path: str, value: Any, pattern: re.Pattern[str] | None = None,
             expected: str = "a text value") -> str:
        if (not isinstance(value, str) or not _clean(value)
                or (pattern is not None and not pattern.fullmatch(value))):
            self.bad(path, value, expected)
        return value

    def choice(self, path: str, value: Any, allowed: tuple[str, ...]) -> str:
        if not isinstance(value, str) or value not in allowed:
            self.bad(path, value, f"one of {', '.join(allowed)}")
        return value

    def url(self, path: str, value: Any) -> str:
        try:
            parts = urlsplit(value) if isinstance(value, str) else None
        except ValueError:  # e.g. "http://[::1" (an unclosed IPv6 address)
            parts = None
        if (parts is None or parts.scheme not in ("http", "https") or not parts.hostname
                or not _clean(value) or any(c.isspace() or not c.isprintable() for c in value)):
            self.bad(path, value, "an http(s) URL such as https://example.org/docs/")
        try:
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            self.bad(path, value, "an http(s) URL with a valid port")
        return value

    def items(self, path: str, value: Any, check: Callable[[str, Any], Any]) -> tuple[Any, ...]:
        if not isinstance(value, list):
            self.bad(path, value, "a list")
        return tuple(check(_join(path, i), item) for i, item in enumerate(value))

    def settings(self, path: str, value: Any) -> dict[str, Any]:
        mapping = self.mapping(path, value, None)
        for key in mapping:
            if not _SETTING_RE.fullmatch(key):
                self.bad(_join(path, key), key, "a Scrapy setting name such as DOWNLOAD_DELAY")
        return dict(mapping)


def _clean(text: str) -> bool:
    """No NUL (no path or URL can hold one) and encodable as UTF-8 (no lone surrogate)."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _int_range(minimum: int, maximum: int | None) -> str:
    if maximum is None:
        return f"an integer ≥ {minimum}"
    return f"an integer from {minimum} to {maximum}"


def _fields(section: type) -> tuple[str, ...]:
    return tuple(name for name in section.__dataclass_fields__ if name != "source")


def _build(r: _Reader, data: Any, base_dir: Path, label: str) -> CollectorConfig:
    top = r.mapping("", data, TOP_LEVEL_KEYS)
    values: dict[str, Any] = {"source": label}
    if "data_dir" in top:
        raw = r.text("data_dir", top["data_dir"], re.compile(r"^\S.*$"), "a directory path")
        try:
            values["data_dir"] = Path(raw).expanduser()
        except RuntimeError:  # ~someone for a user this machine doesn't have
            r.bad("data_dir", raw, "a directory path (no such user's home)")
    values["data_dir"] = base_dir / values.get("data_dir", Path("data"))
    if "github" in top:
        values["github"] = _github(r, top["github"])
    spiders = r.mapping("spiders", top.get("spiders"), SPIDER_NAMES)
    for name, build in (("trending", _trending), ("search", _search), ("docs", _docs)):
        if spiders.get(name) is not None:
            values[name] = build(r, f"spiders.{name}", spiders[name])
    if "round_interval" in top:
        values["round_interval"] = r.duration("round_interval", top["round_interval"])
    if "stop_timeout" in top:
        values["stop_timeout"] = r.duration("stop_timeout", top["stop_timeout"])
    if top.get("memory_budget") is not None:
        values["memory_budget"] = r.size("memory_budget", top["memory_budget"])
    if "logs_keep_days" in top:
        values["logs_keep_days"] = r.integer("logs_keep_days", top["logs_keep_days"], 1)
    if "notify" in top:
        notify = r.mapping("notify", top["notify"], _fields(NotifyConfig))
        url = notify.get("webhook_url")
        values["notify"] = NotifyConfig(r.url("notify.webhook_url", url) if url else None)
    if top.get("redis_url") is not None:
        values["redis_url"] = r.text("redis_url", top["redis_url"], re.compile(
            r"^(redis|rediss|unix)://\S+$"), "a Redis URL such as redis://127.0.0.1:6379/0")
    return CollectorConfig(**values)


def _github(r: _Reader, value: Any) -> GitHubConfig:
    section = r.mapping("github", value, _fields(GitHubConfig))
    values: dict[str, Any] = {}
    for key in ("web_url", "api_url"):
        if key in section:
            values[key] = r.url(f"github.{key}", section[key]).rstrip("/")
    if "token_env" in section:
        values["token_env"] = r.text("github.token_env", section["token_env"], _ENV_NAME_RE,
                                     "an environment variable name such as GITHUB_TOKEN")
    if "web_min_interval" in section:
        values["web_min_interval"] = r.number("github.web_min_interval",
                                              section["web_min_interval"], 0)
    if "limits" in section:
        limits = r.mapping("github.limits", section["limits"], RESOURCES)
        parsed = {}
        for resource, spec in limits.items():
            path = f"github.limits.{resource}"
            spec = r.mapping(path, spec, ("limit", "window"))
            for key in ("limit", "window"):
                if key not in spec:
                    r.fail(f"{path}.{key}", "missing; give both limit and window")
            window = r.duration(f"{path}.window", spec["window"])
            if window <= 0:
                r.bad(f"{path}.window", spec["window"], "a duration above zero")
            parsed[resource] = RateLimit(r.integer(f"{path}.limit", spec["limit"], 1), window)
        values["limits"] = parsed
    return GitHubConfig(**values)


def _common(r: _Reader, path: str, section: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if "weight" in section:
        values["weight"] = r.integer(f"{path}.weight", section["weight"], 0)
    if "settings" in section:
        values["settings"] = r.settings(f"{path}.settings", section["settings"])
    return values


def _trending(r: _Reader, path: str, value: Any) -> TrendingConfig:
    section = r.mapping(path, value, _fields(TrendingConfig))
    values = _common(r, path, section)
    if "languages" in section:
        values["languages"] = r.items(f"{path}.languages", section["languages"], lambda p, v: (
            r.text(p, v, _LANGUAGE_RE, "a GitHub language slug such as python, c%23 or c++ "
                   "(\"\" for all languages)")))
    if "periods" in section:
        values["periods"] = r.items(f"{path}.periods", section["periods"],
                                    lambda p, v: r.choice(p, v, PERIODS))
    return TrendingConfig(**values)


def _search(r: _Reader, path: str, value: Any) -> SearchConfig:
    section = r.mapping(path, value, _fields(SearchConfig))
    values = _common(r, path, section)
    if "queries" in section:
        values["queries"] = r.items(f"{path}.queries", section["queries"], lambda p, v: r.text(
            p, v, re.compile(r"^\s*\S.*$", re.S), "a search query such as 'topic:web-scraping'"))
    if "sort" in section:
        values["sort"] = r.choice(f"{path}.sort", section["sort"], SEARCH_SORTS)
    if "per_page" in section:
        values["per_page"] = r.integer(f"{path}.per_page", section["per_page"], 1, 100)
    return SearchConfig(**values)


def _docs(r: _Reader, path: str, value: Any) -> DocsConfig:
    section = r.mapping(path, value, _fields(DocsConfig))
    values = _common(r, path, section)
    if "start_urls" in section:
        values["start_urls"] = r.items(f"{path}.start_urls", section["start_urls"], r.url)
    if "max_pages_per_site" in section:
        values["max_pages_per_site"] = r.integer(f"{path}.max_pages_per_site",
                                                 section["max_pages_per_site"], 1)
    if "refresh_after" in section:
        values["refresh_after"] = r.duration(f"{path}.refresh_after", section["refresh_after"])
    return DocsConfig(**values)
