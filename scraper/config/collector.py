"""The collector's one configuration object, read from one YAML file and validated on load.

Where the file comes from: ``--config PATH`` (runner commands), else the ``COLLECTOR_CONFIG``
environment variable, else the closest ``collector.yaml`` in the working directory or a
parent of it, else the built-in defaults, which collect from
the real GitHub, so the collector runs with no file at all.

Every problem is one line naming the file, the key path, the value and what is allowed::

    collector.yaml: spiders.trending.periods[1]: 'hourly' is not one of daily, weekly, monthly
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, NamedTuple, NoReturn
from urllib.parse import urlsplit

from scraper import settings as defaults
from scraper.config.moved import update_moved
from scraper.config.settingrules import ENV_NAME_RE as _ENV_NAME_RE
from scraper.config.settingrules import LANGUAGE_RE as _LANGUAGE_RE
from scraper.config.settingrules import PERIODS, SEARCH_SORTS
from scraper.config.settingrules import SPOKEN_RE as _SPOKEN_RE
from scraper.config.settingtypes import owned_setting, setting_problem
from scraper.utils.regularfile import NotARegularFile, read_regular_file
from scraper.utils.units import DURATION_HELP, SIZE_HELP, parse_duration, parse_size
from scraper.utils.urlmask import mask_url

CONFIG_ENV = "COLLECTOR_CONFIG"
"""Environment variable naming the config file; the runner sets it for every worker it forks."""
REDIS_URL_ENV = "COLLECTOR_REDIS_URL"
"""Environment variable naming a Redis URL; it wins over the config's ``redis_url``. The runner's
``--redis-url`` sets it for its workers, so a worker stays exactly ``scrapy crawl …``."""
REDIS_URL_RE = re.compile(r"^(redis|rediss|unix)://\S+$")
REDIS_URL_HELP = "a Redis URL such as redis://127.0.0.1:6379/0"

DEFAULT_CONFIG_FILE = "collector.yaml"

SPIDER_NAMES = ("trending", "search", "docs")
RESOURCES = ("core", "search")

TOP_LEVEL_KEYS = (
    "data_dir", "github", "spiders", "round_interval", "stop_timeout", "memory_budget",
    "logs_keep_days", "notify", "redis_url", "catalog_interval", "health", "autoscale",
    "metrics_dir", "items_keep_days", "metrics_group",
)

_SETTING_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")


class ConfigError(Exception):
    """A configuration problem, already phrased as the one line the user sees."""


class Secret:
    """A credential that prints as ``***`` wherever it ends up (reprs, settings dumps, logs);
    only :meth:`reveal` gives the value, at the one place that sends it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


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
    web_url: str = defaults.GITHUB_WEB_URL
    api_url: str = defaults.GITHUB_API_URL
    token_env: str = defaults.GITHUB_TOKEN_ENV
    web_min_interval: float = defaults.GITHUB_WEB_MIN_INTERVAL
    limits: Mapping[str, RateLimit] = field(default_factory=dict)
    token_file: Path | None = defaults.GITHUB_TOKEN_FILE
    """A file holding the token (mode 0600 or 0400), for a process started without
    ``$token_env`` (cron, a systemd unit): the token alone, or a line ``GITHUB_TOKEN=…`` as a
    systemd ``EnvironmentFile`` has it; ``$token_env`` wins when set."""
    token: Secret | None = None
    """Read from ``$token_env``, else ``token_file``, when the config is loaded; None means
    anonymous."""

    def first_guess_limits(self) -> dict[str, RateLimit]:
        base = TOKEN_LIMITS if self.token else ANONYMOUS_LIMITS
        return {**base, **self.limits}


class DeveloperList(NamedTuple):
    """A trending developers list in the trending spider's start list (after the repository
    lists' ``(language, period, spoken language)`` triples)."""

    language: str
    period: str


@dataclass(frozen=True, slots=True)
class DevelopersConfig:
    enabled: bool = defaults.TRENDING_DEVELOPERS_ENABLED
    languages: tuple[str, ...] = tuple(defaults.TRENDING_DEVELOPER_LANGUAGES)
    periods: tuple[str, ...] = tuple(defaults.TRENDING_DEVELOPER_PERIODS)


@dataclass(frozen=True, slots=True)
class TrendingConfig:
    weight: int = 1
    languages: tuple[str, ...] = tuple(defaults.TRENDING_LANGUAGES)
    periods: tuple[str, ...] = tuple(defaults.TRENDING_PERIODS)
    spoken_languages: tuple[str, ...] = tuple(defaults.TRENDING_SPOKEN_LANGUAGES)
    archive_retention: float | None = defaults.TRENDING_ARCHIVE_RETENTION
    """Seconds a raw page stays in the archive; None = forever (the pages are what a parser
    fix re-reads)."""
    developers: DevelopersConfig = field(default_factory=DevelopersConfig)
    round_interval: float | None = None  # None: the global one, else ROUND_INTERVALS
    settings: Mapping[str, Any] = field(default_factory=dict)

    def start_entries(self) -> list[tuple[str, str, str] | DeveloperList]:
        developers = self.developers
        return trending_entries(self.languages, self.periods, self.spoken_languages) + \
            developer_entries(developers.languages if developers.enabled else (),
                              developers.periods)


def trending_entries(languages: Sequence[str], periods: Sequence[str],
                     spoken_languages: Sequence[str] = ("",)) -> list[tuple[str, str, str]]:
    """(language, period, spoken language) triples: languages × periods × spoken languages,
    in config order (with the default ``[""]`` the shards of earlier versions keep their
    lists)."""
    return [(language, period, spoken) for language in languages for period in periods
            for spoken in spoken_languages]


def developer_entries(languages: Sequence[str], periods: Sequence[str]) -> list[DeveloperList]:
    """The developer lists, languages × periods, in config order; they come after the
    repository lists, so turning them on leaves every repository list on its shard."""
    return [DeveloperList(language, period) for language in languages for period in periods]


@dataclass(frozen=True, slots=True)
class SearchConfig:
    weight: int = 1
    queries: tuple[str, ...] = tuple(defaults.SEARCH_QUERIES)
    sort: str = defaults.SEARCH_SORT
    per_page: int = defaults.SEARCH_PER_PAGE
    complete: bool = defaults.SEARCH_COMPLETE
    max_results_per_query: int | None = defaults.SEARCH_MAX_RESULTS_PER_QUERY
    round_interval: float | None = None  # None: the global one, else ROUND_INTERVALS
    settings: Mapping[str, Any] = field(default_factory=dict)

    def start_entries(self) -> list[str]:
        return list(self.queries)


@dataclass(frozen=True, slots=True)
class DocsConfig:
    weight: int = 2
    start_urls: tuple[str, ...] = tuple(defaults.DOCS_START_URLS)
    max_pages_per_site: int = defaults.DOCS_MAX_PAGES_PER_SITE
    refresh_after: float = defaults.DOCS_REFRESH_AFTER
    sitemaps: bool = defaults.DOCS_SITEMAPS
    round_interval: float | None = None  # None: the global one, else ROUND_INTERVALS
    settings: Mapping[str, Any] = field(default_factory=dict)

    def start_entries(self) -> list[str]:
        return list(self.start_urls)


@dataclass(frozen=True, slots=True)
class NotifyConfig:
    webhook_url: str | None = None


@dataclass(frozen=True, slots=True)
class HealthConfig:
    """When a spider-shard counts as unhealthy (runner/core/health.py)."""

    failed_rounds: int = defaults.HEALTH_FAILED_ROUNDS
    """Rounds in a row with no answer carrying data before it is unhealthy."""
    max_round: float | None = None
    """Seconds a round may run before its worker counts as hung; None: see :meth:`round_limit`."""
    disk_days_left: float = 14.0
    """The watchdog says once when the data disk will be full in fewer days than this; 0: never."""

    def round_limit(self, round_interval: float) -> float:
        if self.max_round is not None:
            return self.max_round
        return (defaults.HEALTH_MAX_ROUND_INTERVALS * round_interval
                + defaults.HEALTH_MAX_ROUND_SLACK)


@dataclass(frozen=True, slots=True)
class AutoscaleConfig:
    """How many planned workers crawl at once (runner/supervision/autoscale.py)."""

    min_concurrency: int | None = None
    """Workers that may always crawl at once; None: the CPU cores."""
    max_concurrency: int | None = None
    """Never more than this many at once; None: every planned worker."""
    max_used_cpu_ratio: float = defaults.AUTOSCALE_MAX_USED_CPU_RATIO
    """Machine CPU use (0–1) from which no more workers start, and fewer are let start."""


SpiderConfig = TrendingConfig | SearchConfig | DocsConfig

ROUND_INTERVALS: dict[str, float] = dict(defaults.ROUND_INTERVALS)


@dataclass(frozen=True, slots=True)
class CollectorConfig:
    """Everything the user can configure; built only through :func:`load_config`."""

    data_dir: Path = Path(defaults.COLLECTOR_DATA_DIR)
    github: GitHubConfig = field(default_factory=GitHubConfig)
    trending: TrendingConfig = field(default_factory=TrendingConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    docs: DocsConfig = field(default_factory=DocsConfig)
    round_interval: float | None = None
    """Every spider's interval unless its own section sets one; None: ROUND_INTERVALS."""
    stop_timeout: float = defaults.STOP_TIMEOUT
    memory_budget: int | None = None
    logs_keep_days: int = defaults.LOGS_KEEP_DAYS
    notify: NotifyConfig = field(default_factory=NotifyConfig)
    redis_url: str | None = None
    """``$COLLECTOR_REDIS_URL`` if set, else the file's ``redis_url``; None = one machine."""
    catalog_interval: float = defaults.CATALOG_INTERVAL
    """Seconds between the runner's catalog builds; 0 = never."""
    health: HealthConfig = field(default_factory=HealthConfig)
    autoscale: AutoscaleConfig = field(default_factory=AutoscaleConfig)
    items_keep_days: int | None = None
    """Compressed segments already in the catalog and older than this are removed by the
    catalog build; None (the default): items are kept forever."""
    metrics_dir: Path | None = None
    """Where the runner writes hubcollect.prom (node_exporter's textfile collector); None:
    {data_dir}/state/metrics."""
    metrics_group: int | None = None
    """The group id hubcollect.prom (0640) and a metrics_dir the runner makes (0750) belong
    to, so a node_exporter of that group reads them; None: both private (0600, 0700)."""
    source: str | None = None  # the file it came from, None for the built-in defaults

    def spider(self, name: str) -> SpiderConfig:
        if name not in SPIDER_NAMES:
            raise KeyError(name)
        return getattr(self, name)

    def round_interval_of(self, name: str) -> float:
        """Seconds between ``name``'s rounds: its own, else the global, else its default."""
        own = self.spider(name).round_interval
        if own is not None:
            return own
        return self.round_interval if self.round_interval is not None else ROUND_INTERVALS[name]

    @property
    def shortest_round_interval(self) -> float:
        """The most often any spider runs a round (how stale the runner's status may get)."""
        return min(self.round_interval_of(name) for name in SPIDER_NAMES)


# --- loading ----------------------------------------------------------------------------------


def resolve_config_path(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The file to read: explicit path, else $COLLECTOR_CONFIG, else the closest collector.yaml
    in the working directory or above it (as Scrapy finds scrapy.cfg), else None: defaults."""
    if explicit:
        return Path(explicit)
    from_env = os.environ.get(CONFIG_ENV)
    if from_env:
        return Path(from_env)
    default = Path(DEFAULT_CONFIG_FILE)
    if default.exists():
        return default
    return next((parent / DEFAULT_CONFIG_FILE for parent in Path.cwd().parents
                 if (parent / DEFAULT_CONFIG_FILE).exists()), None)


def load_config(explicit: str | os.PathLike[str] | None = None,
                environ: Mapping[str, str] | None = None) -> CollectorConfig:
    """Read and validate the configuration file and the environment it names (the token, the
    Redis URL), once; raises :class:`ConfigError` with a one-line message."""
    environ = os.environ if environ is None else environ
    path = resolve_config_path(explicit)
    if path is None:
        config = CollectorConfig(data_dir=Path(defaults.COLLECTOR_DATA_DIR).absolute())
    else:
        config = parse_config(_read_text(path, explicit), str(path),
                              base_dir=path.absolute().parent)
    return _with_environment(config, environ)


def load_config_record(path: Path, environ: Mapping[str, str] | None = None) -> CollectorConfig:
    """A config the runner recorded (``state/config.json``, :mod:`runner.core.resolved`), read
    as the JSON it was written as and validated as a file's keys are: ``status``, ``metrics``
    and the watchdog, every minute, then never load the YAML parser for it."""
    import json

    label = str(path)
    try:
        data = json.loads(_read_text(path, path))
    except ValueError as exc:
        raise ConfigError(f"{label}: invalid JSON: {_one_line(exc)}") from None
    config = _build(_Reader(label), {} if data is None else data, path.absolute().parent, label)
    return _with_environment(config, os.environ if environ is None else environ)


def _with_environment(config: CollectorConfig, environ: Mapping[str, str]) -> CollectorConfig:
    token = environ.get(config.github.token_env) or None
    if token is None and config.github.token_file is not None:
        token = read_token_file(config.github.token_file, config.github.token_env,
                                config.source or "config")
    redis_url = environ.get(REDIS_URL_ENV) or None
    if redis_url is not None and not REDIS_URL_RE.fullmatch(redis_url):
        raise ConfigError(f"${REDIS_URL_ENV}: {redis_url!r} is not {REDIS_URL_HELP}")
    return replace(config, github=replace(config.github, token=Secret(token) if token else None),
                   redis_url=redis_url or config.redis_url)


TOKEN_FILE_MAX = 4096
"""Bytes a token file may hold: a token is 40 to a few hundred characters."""


def read_token_file(path: Path, token_env: str, label: str) -> str:
    """The token in ``path``: the file's one line, or the value of its ``{token_env}=`` line
    (a systemd ``EnvironmentFile``). ConfigError, one line, when the file is missing, readable
    by others than its owner, or holds no token."""
    where = f"{label}: github.token_file: {path}"
    try:
        mode = path.stat().st_mode
        if mode & 0o077:
            raise ConfigError(f"{where} is readable by others than its owner (mode "
                              f"{mode & 0o777:04o}); chmod 600 {path}")
        raw = read_regular_file(path, TOKEN_FILE_MAX)
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file") from None
    except NotARegularFile as exc:
        raise ConfigError(f"{where} {exc.reason}; expected a file holding the token") from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not UTF-8 text") from None
    lines = [line.strip() for line in text.splitlines()
             if line.strip() and not line.strip().startswith("#")]
    assigned = re.compile(rf"^(?:export\s+)?{re.escape(token_env)}\s*=\s*(.*)$")
    values = [m.group(1).strip().strip("'\"") for line in lines if (m := assigned.match(line))]
    token = values[-1] if values else (lines[0] if len(lines) == 1 and "=" not in lines[0]
                                       else None)
    if not token or any(c.isspace() or not c.isprintable() for c in token):
        raise ConfigError(f"{where}: holds no token; expected the token alone on one line, or a "
                          f"line {token_env}=…")
    return token


CONFIG_FILE_MAX = 1 << 20
"""Bytes a config file may hold: the commented example of every key is under 6 KB."""


def _read_text(path: Path, explicit: object = None) -> str:
    try:
        return read_regular_file(path, CONFIG_FILE_MAX).decode("utf-8")
    except FileNotFoundError:
        via = "" if explicit else f" (named by ${CONFIG_ENV})"
        raise ConfigError(f"{path}: no such file{via}") from None
    except NotARegularFile as exc:
        raise ConfigError(f"{path} {exc.reason}; expected a YAML file of at most "
                          f"{CONFIG_FILE_MAX >> 20} MB") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def parse_config(text: str, label: str, base_dir: Path | None = None) -> CollectorConfig:
    """Validate YAML ``text``; ``label`` names the file, ``base_dir`` anchors data_dir."""
    import yaml  # here: a command that reads no file (the defaults) never pays for it

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

    def boolean(self, path: str, value: Any) -> bool:
        if not isinstance(value, bool):
            self.bad(path, value, "true or false")
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

    def positive_duration(self, path: str, value: Any) -> float:
        seconds = self.duration(path, value)
        if seconds <= 0:
            self.bad(path, value, "a duration above zero")
        return seconds

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

    def page_url(self, path: str, value: Any) -> str:
        """A URL the crawler fetches and writes into items and logs: no credentials in it."""
        url = self.url(path, value)
        parts = urlsplit(url)
        if parts.username is not None or parts.password is not None:
            self.bad(path, mask_url(url), "a URL without user:password@ (credentials in a start "
                     "URL would be written into every item and log line)")
        return url

    def items(self, path: str, value: Any, check: Callable[[str, Any], Any]) -> tuple[Any, ...]:
        if not isinstance(value, list):
            self.bad(path, value, "a list")
        return tuple(check(_join(path, i), item) for i, item in enumerate(value))

    def settings(self, path: str, value: Any) -> dict[str, Any]:
        mapping = {key: update_moved(path, key, setting)
                   for key, setting in self.mapping(path, value, None).items()}
        for key in mapping:
            if not _SETTING_RE.fullmatch(key):
                self.bad(_join(path, key), key, "a Scrapy setting name such as DOWNLOAD_DELAY")
            instead = owned_setting(key)
            if instead:
                self.fail(_join(path, key), instead)
            expected = setting_problem(key, mapping[key])
            if expected:
                self.bad(_join(path, key), mapping[key], expected)
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


Handler = Callable[[str, Any], Any]
"""Validates one key's value, given its key path; returns the value the config object holds."""


def _optional(check: Handler) -> Handler:
    """``check``, with an explicit ``null`` meaning "not set"."""
    return lambda path, value: None if value is None else check(path, value)


def _group(r: _Reader, path: str, value: Any) -> int:
    """A group of this machine, by name or number: its id."""
    import grp

    try:
        if isinstance(value, int) and not isinstance(value, bool):
            return grp.getgrgid(value).gr_gid
        return grp.getgrnam(r.text(path, value, expected="a group name")).gr_gid
    except (KeyError, OverflowError):
        r.bad(path, value, "a group of this machine (see /etc/group), e.g. the one "
              "node_exporter runs as")


def _section(r: _Reader, path: str, value: Any, cls: type,
             handlers: Mapping[str, Handler]) -> Any:
    """Build ``cls`` from a mapping whose keys are exactly those ``handlers`` handle: a key
    without a handler is refused as unknown, never accepted and ignored."""
    names = [spec.name for spec in fields(cls)]
    unhandled = set(handlers) - set(names)
    if unhandled:  # a programming error, not the user's
        raise TypeError(f"{cls.__name__} has no field {sorted(unhandled)[0]}")
    allowed = tuple(name for name in names if name in handlers)
    section = r.mapping(path, value, allowed)
    return cls(**{key: handlers[key](_join(path, key), raw) for key, raw in section.items()})


def _build(r: _Reader, data: Any, base_dir: Path, label: str) -> CollectorConfig:
    def data_dir(path: str, value: Any) -> Path:
        raw = r.text(path, value, re.compile(r"^\S.*$"), "a directory path")
        try:
            return base_dir / Path(raw).expanduser()
        except RuntimeError:  # ~someone for a user this machine doesn't have
            r.bad(path, raw, "a directory path (no such user's home)")

    def spiders(path: str, value: Any) -> dict[str, Any]:
        builders = {"trending": _trending, "search": _search, "docs": _docs}
        section = r.mapping(path, value, tuple(builders))
        return {name: builders[name](r, _join(path, name), raw)
                for name, raw in section.items() if raw is not None}

    handlers: dict[str, Handler] = {
        "data_dir": data_dir,
        "github": lambda path, value: _github(r, path, value, base_dir),
        "spiders": spiders,
        # null (the resolved record of a config that sets none): each spider's own default
        "round_interval": _optional(r.duration),
        "stop_timeout": r.duration,
        "memory_budget": _optional(r.size),
        "logs_keep_days": lambda path, value: r.integer(path, value, 1),
        "notify": lambda path, value: _section(r, path, value, NotifyConfig, {
            "webhook_url": _optional(r.url)}),
        "redis_url": _optional(lambda path, value: r.text(path, value, REDIS_URL_RE,
                                                         REDIS_URL_HELP)),
        "catalog_interval": r.duration,
        "health": lambda path, value: _section(r, path, value, HealthConfig, {
            "failed_rounds": lambda path, value: r.integer(path, value, 1),
            "max_round": _optional(r.positive_duration),
            "disk_days_left": lambda path, value: r.number(path, value, 0)}),
        "autoscale": lambda path, value: _autoscale(r, path, value),
        "metrics_dir": _optional(data_dir),
        "items_keep_days": _optional(lambda path, value: r.integer(path, value, 1)),
        "metrics_group": _optional(lambda path, value: _group(r, path, value)),
    }
    if tuple(handlers) != TOP_LEVEL_KEYS:  # a programming error, not the user's
        raise TypeError("TOP_LEVEL_KEYS and the top-level handlers disagree")
    top = r.mapping("", data, TOP_LEVEL_KEYS)
    values: dict[str, Any] = {key: handlers[key](key, raw) for key, raw in top.items()}
    values.update(values.pop("spiders", {}))
    values.setdefault("data_dir", base_dir / defaults.COLLECTOR_DATA_DIR)
    return CollectorConfig(**values, source=label)


def _autoscale(r: _Reader, path: str, value: Any) -> AutoscaleConfig:
    def concurrency(path: str, value: Any) -> int:
        return r.integer(path, value, 1, 10000)

    def ratio(path: str, value: Any) -> float:
        number = r.number(path, value, 0.05)
        if number > 1:
            r.bad(path, value, "a share of the CPU from 0.05 to 1 (0.9 = 90%)")
        return number

    config = _section(r, path, value, AutoscaleConfig, {
        "min_concurrency": _optional(concurrency), "max_concurrency": _optional(concurrency),
        "max_used_cpu_ratio": ratio})
    if (config.min_concurrency and config.max_concurrency
            and config.min_concurrency > config.max_concurrency):
        r.fail(f"{path}.min_concurrency", f"{config.min_concurrency} is above max_concurrency "
               f"{config.max_concurrency}")
    return config


def _github(r: _Reader, path: str, value: Any, base_dir: Path) -> GitHubConfig:
    def url(path: str, value: Any) -> str:
        return r.url(path, value).rstrip("/")

    def token_file(path: str, value: Any) -> Path:
        raw = r.text(path, value, re.compile(r"^\S.*$"), "a file path")
        try:
            return base_dir / Path(raw).expanduser()
        except RuntimeError:  # ~someone for a user this machine doesn't have
            r.bad(path, raw, "a file path (no such user's home)")

    def limits(path: str, value: Any) -> dict[str, RateLimit]:
        parsed = {}
        for resource, spec in r.mapping(path, value, RESOURCES).items():
            where = _join(path, resource)
            spec = r.mapping(where, spec, ("limit", "window"))
            for key in ("limit", "window"):
                if key not in spec:
                    r.fail(f"{where}.{key}", "missing; give both limit and window")
            window = r.positive_duration(f"{where}.window", spec["window"])
            parsed[resource] = RateLimit(r.integer(f"{where}.limit", spec["limit"], 1), window)
        return parsed

    return _section(r, path, value, GitHubConfig, {
        "web_url": url,
        "api_url": url,
        "token_env": lambda path, value: r.text(
            path, value, _ENV_NAME_RE, "an environment variable name such as GITHUB_TOKEN"),
        "web_min_interval": lambda path, value: r.number(path, value, 0),
        "limits": limits,
        "token_file": _optional(token_file),
    })


def _common(r: _Reader) -> dict[str, Handler]:
    """The keys every spider section takes."""
    return {"weight": lambda path, value: r.integer(path, value, 0), "settings": r.settings,
            "round_interval": _optional(r.duration)}


def _trending(r: _Reader, path: str, value: Any) -> TrendingConfig:
    def languages(path: str, value: Any) -> tuple[str, ...]:
        return r.items(path, value, lambda p, v: r.text(
            p, v, _LANGUAGE_RE, "a GitHub language slug such as python, c%23 or c++ "
            "(\"\" for all languages)"))

    def periods(path: str, value: Any) -> tuple[str, ...]:
        return r.items(path, value, lambda p, v: r.choice(p, v, PERIODS))

    return _section(r, path, value, TrendingConfig, {
        **_common(r),
        "languages": languages,
        "periods": periods,
        "developers": lambda path, value: _section(r, path, value, DevelopersConfig, {
            "enabled": r.boolean, "languages": languages, "periods": periods}),
        "spoken_languages": lambda path, value: r.items(path, value, lambda p, v: r.text(
            p, v, _SPOKEN_RE, "a two-letter ISO 639-1 code such as en or zh, as GitHub's "
            "spoken_language_code takes it (\"\" for any spoken language)")),
        "archive_retention": _optional(r.positive_duration),
    })


def _search(r: _Reader, path: str, value: Any) -> SearchConfig:
    return _section(r, path, value, SearchConfig, {
        **_common(r),
        "queries": lambda path, value: r.items(path, value, lambda p, v: r.text(
            p, v, re.compile(r"^\s*\S.*$", re.S), "a search query such as 'topic:web-scraping'")),
        "sort": lambda path, value: r.choice(path, value, SEARCH_SORTS),
        "per_page": lambda path, value: r.integer(path, value, 1, 100),
        "complete": r.boolean,
        "max_results_per_query": _optional(lambda path, value: r.integer(path, value, 1)),
    })


def _docs(r: _Reader, path: str, value: Any) -> DocsConfig:
    return _section(r, path, value, DocsConfig, {
        **_common(r),
        "start_urls": lambda path, value: r.items(path, value, r.page_url),
        "max_pages_per_site": lambda path, value: r.integer(path, value, 1),
        "refresh_after": r.duration,
        "sitemaps": r.boolean,
    })
