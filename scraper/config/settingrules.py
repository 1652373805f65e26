"""The values each of the project's own settings may take: ranges, choices, shapes.

:mod:`scraper.config.settingtypes` checks that Scrapy can read a value as the type of its
default; the rules here check that the component reading it can use it: ``ITEMSTORE_COMPRESS:
zip`` is text, as its default is, and no compression the item store knows. One rule per setting
of ``scraper/settings.py`` that is not a flag (a flag's type is its whole rule);
tests/test_config.py holds the table to that module. Values come as the YAML gave them or, from
``-s``, as text: a rule reads both as the component's ``getint``/``getfloat``/``getlist`` would.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

PERIODS = ("daily", "weekly", "monthly")
SEARCH_SORTS = ("stars", "forks", "help-wanted-issues", "updated")
COMPRESSIONS = ("", "gzip")
"""How the item store keeps a closed segment: as written, or ``.jsonl.gz``."""
LANGUAGE_RE = re.compile(r"^[A-Za-z0-9%+._-]*$")
SPOKEN_RE = re.compile(r"^(?:[a-z]{2})?$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HEADER_NAME_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # RFC 9110's token
LOG_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "NOTSET")
_DOTTED_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")
_KEY_PREFIX_RE = re.compile(r"^[A-Za-z0-9_.:-]+$")


@dataclass(frozen=True, slots=True)
class Rule:
    expected: str
    """What a value must be, after "is not": ``an integer from 1 to 100``."""
    accepts: Callable[[Any], bool]


def _as_number(value: Any, integer: bool) -> float | None:
    """``value`` as ``getint``/``getfloat`` reads it; None where they would fail."""
    if isinstance(value, bool):
        return None
    try:
        if integer:
            if isinstance(value, float):
                return value if value.is_integer() else None
            return float(int(value))
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def number(minimum: float | None = None, maximum: float | None = None, *,
           above: float | None = None, integer: bool = False) -> Rule:
    """A number ≥ ``minimum`` (or > ``above``), ≤ ``maximum``; a whole one if ``integer``."""
    kind = "an integer" if integer else "a number"
    if minimum is not None and maximum is not None:
        expected = f"{kind} from {minimum:g} to {maximum:g}"
    elif above is not None:
        expected = f"{kind} above {above:g}"
    elif minimum is not None:
        expected = f"{kind} ≥ {minimum:g}"
    else:
        expected = kind

    def accepts(value: Any) -> bool:
        read = _as_number(value, integer)
        return read is not None and not (
            (minimum is not None and read < minimum) or (maximum is not None and read > maximum)
            or (above is not None and read <= above))

    return Rule(expected, accepts)


def optional(rule: Rule, meaning: str) -> Rule:
    """``rule``, or nothing (None, or ``-s NAME=`` with no value): ``meaning``."""
    return Rule(f"{rule.expected}, or empty for {meaning}",
                lambda value: value is None or value == "" or rule.accepts(value))


def choice(values: Sequence[str]) -> Rule:
    shown = ", ".join("'' (none)" if value == "" else repr(value) for value in values)
    return Rule(f"one of {shown}", lambda value: isinstance(value, str) and value in values)


def text(pattern: re.Pattern[str], expected: str) -> Rule:
    return Rule(expected, lambda value: isinstance(value, str) and bool(pattern.fullmatch(value)))


def any_text(expected: str) -> Rule:
    return Rule(expected, lambda value: isinstance(value, str))


def _items(value: Any) -> list[Any] | None:
    """A list as ``getlist`` reads it: ``-s NAME=a,b`` is ``["a", "b"]``."""
    if isinstance(value, str):
        return value.split(",")
    if isinstance(value, list | tuple):
        return list(value)
    return None


def each(rule: Rule, expected: str) -> Rule:
    """A list (or comma-separated text) whose every item ``rule`` accepts."""
    def accepts(value: Any) -> bool:
        items = _items(value)
        return items is not None and all(rule.accepts(item) for item in items)

    return Rule(expected, accepts)


def _is_url(value: Any) -> bool:
    if not isinstance(value, str) or any(c.isspace() for c in value):
        return False
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


URL = Rule("an http(s) URL such as https://api.github.com", _is_url)
CLASS_PATH = Rule("an importable path such as scraper.dedup.sqliteurls.SqliteDeltaFetchStorage",
                  lambda value: isinstance(value, str) and bool(_DOTTED_RE.fullmatch(value)))


def in_config(key: str) -> str:
    return f"set {key} in collector.yaml"


def plain(value: Any) -> Any:
    """A dict setting as a dict: Scrapy holds one as ``BaseSettings`` (``-s NAME='{...}'``
    too, once it read the JSON)."""
    to_dict = getattr(value, "copy_to_dict", None)
    return to_dict() if callable(to_dict) else value


def _json(value: Any) -> Any:
    """A dict setting given as text, as Scrapy's ``getdict`` reads it."""
    value = plain(value)
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return None


def _components(value: Any) -> bool:
    mapping = _json(value)
    return isinstance(mapping, dict) and all(
        (not isinstance(path, str) or bool(_DOTTED_RE.fullmatch(path)))
        and (order is None or (isinstance(order, int | float) and not isinstance(order, bool)))
        for path, order in mapping.items())


def _slots(value: Any) -> bool:
    mapping = _json(value)
    return isinstance(mapping, dict) and all(isinstance(slot, dict) for slot in mapping.values())


def _codec(value: Any) -> bool:
    try:
        codecs.lookup(value)
    except (LookupError, TypeError):
        return False
    return True


def _log_level(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return True
    return isinstance(value, str) and (value in LOG_LEVELS or value.isdigit())


COMPONENTS = Rule("a mapping of class paths to order numbers (or null to turn one off), such "
                  "as {\"pipelines.itemstore.JsonLinesItemStore\": 900}", _components)
MODULE = text(re.compile(_DOTTED_RE.pattern.replace("+$", "*$")), "a module path such as spiders")
LEVEL = Rule(f"a log level: {', '.join(LOG_LEVELS)}", _log_level)
POSITIVE = number(above=0)
NON_NEGATIVE = number(0)
COUNT = number(1, integer=True)

RULES: dict[str, Rule] = {
    # Scrapy's own, as the project sets them
    "BOT_NAME": text(re.compile(r"^\S+$"), "a name without spaces"),
    "SPIDER_MODULES": each(MODULE, "module paths such as spiders"),
    "NEWSPIDER_MODULE": MODULE,
    "COMMANDS_MODULE": MODULE,
    "USER_AGENT": text(re.compile(r"^\S.*$"), "a User-Agent header value"),
    "ADDONS": COMPONENTS,
    "EXTENSIONS": COMPONENTS,
    "SPIDER_MIDDLEWARES": COMPONENTS,
    "DOWNLOADER_MIDDLEWARES": COMPONENTS,
    "ITEM_PIPELINES": COMPONENTS,
    "DOWNLOAD_SLOTS": Rule("a mapping of slot names to their options, such as "
                           "{\"github-api\": {\"concurrency\": 4}}", _slots),
    "LOG_LEVEL": LEVEL,
    "DEFAULT_DROPITEM_LOG_LEVEL": LEVEL,
    "LOG_VERSIONS": each(any_text(""), "names of Python distributions such as lxml,twisted"),
    "CONCURRENT_REQUESTS": COUNT,
    "CONCURRENT_ITEMS": COUNT,
    "CONCURRENT_REQUESTS_PER_DOMAIN": COUNT,
    "AUTOTHROTTLE_START_DELAY": NON_NEGATIVE,
    "AUTOTHROTTLE_MAX_DELAY": NON_NEGATIVE,
    "AUTOTHROTTLE_TARGET_CONCURRENCY": POSITIVE,
    "RETRY_TIMES": number(0, integer=True),
    "DOWNLOAD_TIMEOUT": POSITIVE,
    "DOWNLOAD_MAXSIZE": number(0, integer=True),
    "DOWNLOAD_WARNSIZE": number(0, integer=True),
    "REDIRECT_MAX_TIMES": number(0, integer=True),
    "MEMUSAGE_LIMIT_MB": number(0, integer=True),
    "MEMUSAGE_WARNING_MB": number(0, integer=True),
    "MEMUSAGE_CHECK_INTERVAL_SECONDS": POSITIVE,
    "STATS_CLASS": CLASS_PATH,
    "FEED_EXPORT_ENCODING": Rule("a text encoding such as utf-8", _codec),
    # the collector's own: most mirror a config key, checked there the same way
    "COLLECTOR_CONFIG": optional(any_text("a path of collector.yaml"), "the usual search"),
    "COLLECTOR_DATA_DIR": text(re.compile(r"^\S.*$"), "a directory path"),
    "GITHUB_API_URL": URL,
    "GITHUB_WEB_URL": URL,
    "GITHUB_TOKEN_ENV": text(ENV_NAME_RE, "an environment variable name such as GITHUB_TOKEN"),
    "GITHUB_WEB_MIN_INTERVAL": NON_NEGATIVE,
    # the spiders' start lists and options
    "TRENDING_LANGUAGES": each(text(LANGUAGE_RE, ""), "GitHub language slugs such as "
                               "python,c%23,c++ (an empty one for all languages)"),
    "TRENDING_PERIODS": each(choice(PERIODS), f"periods from {', '.join(PERIODS)}"),
    "TRENDING_SPOKEN_LANGUAGES": each(text(SPOKEN_RE, ""), "two-letter ISO 639-1 codes such "
                                      "as en,zh (an empty one for any spoken language)"),
    "TRENDING_DEVELOPER_LANGUAGES": each(text(LANGUAGE_RE, ""), "GitHub language slugs such "
                                         "as python,rust (an empty one for all languages)"),
    "TRENDING_DEVELOPER_PERIODS": each(choice(PERIODS), f"periods from {', '.join(PERIODS)}"),
    "SEARCH_QUERIES": each(text(re.compile(r"^\s*\S.*$", re.S), ""),
                           "search queries such as topic:web-scraping"),
    "SEARCH_SORT": choice(SEARCH_SORTS),
    "SEARCH_PER_PAGE": number(1, 100, integer=True),
    "SEARCH_MAX_RESULTS_PER_QUERY": optional(COUNT, "no cap"),
    "DOCS_START_URLS": each(URL, "http(s) URLs such as https://docs.scrapy.org/en/latest/"),
    "DOCS_MAX_PAGES_PER_SITE": COUNT,
    "DOCS_REFRESH_AFTER": NON_NEGATIVE,
    "DOCS_SITEMAP_MAXSIZE": COUNT,
    # components
    "WORKER_STATE_INTERVAL": POSITIVE,
    "ROUND_UNUSUAL_RATIO": number(0.01, 1),
    "ROUND_HISTORY_DAYS": POSITIVE,
    "GC_GEN0_THRESHOLD": number(0, integer=True),
    "LEDGER_KEEP_DAYS": number(1, integer=True),
    "LOG_MAX_BYTES": number(0, integer=True),
    "LOG_BACKUP_COUNT": number(0, integer=True),
    "LOG_ROTATE_INTERVAL": POSITIVE,
    "DELTAFETCH_STORAGE": CLASS_PATH,
    "CONTENTHASH_STORAGE": CLASS_PATH,
    "BUDGET_STORAGE": CLASS_PATH,
    "ETAG_STORAGE": CLASS_PATH,
    "SLICEPLAN_STORAGE": CLASS_PATH,
    "MEMORY_STORAGE_SPACE": any_text("a name (any text)"),
    "BUDGET_RESET_GUARD": NON_NEGATIVE,
    "BUDGET_MIN_INTERVAL": NON_NEGATIVE,
    "BUDGET_BACKOFF_START": POSITIVE,
    "BUDGET_BACKOFF_MAX": POSITIVE,
    "BUDGET_MAX_WAIT": POSITIVE,
    "ITEMSTORE_SEGMENT_SECONDS": NON_NEGATIVE,
    "ITEMSTORE_SEGMENT_BYTES": COUNT,
    "ITEMSTORE_COMPRESS": choice(COMPRESSIONS),
    "TRENDING_MAX_ROWS": COUNT,
    "TRENDING_MAX_BYTES": COUNT,
    "TRENDING_ARCHIVE_HEADERS": each(text(HEADER_NAME_RE, ""), "HTTP header names such as "
                                     "Content-Type"),
    "CATALOG_MAX_LINE_BYTES": COUNT,
    "CATALOG_MAX_LINE_VALUES": COUNT,
    "ITEM_MAX_DEPTH": COUNT,
    "TRENDING_MAX_ELEMENTS": COUNT,
    "DOCS_MAX_ELEMENTS": COUNT,
    "TRENDING_PARSER": CLASS_PATH,
    "TRENDING_DEVELOPERS_PARSER": CLASS_PATH,
    "TRENDING_ARCHIVE_STORAGE": CLASS_PATH,
    "TRENDING_ARCHIVE_RETENTION": optional(POSITIVE, "forever"),
    "RETRY_BACKOFF_BASE": NON_NEGATIVE,
    "RETRY_BACKOFF_MAX": NON_NEGATIVE,
    # the distributed mode
    "REDIS_KEY_PREFIX": text(_KEY_PREFIX_RE, "a key prefix of letters, digits and _.:- "
                             "such as hubcollect"),
    "DISTRIBUTED_HEARTBEAT_INTERVAL": POSITIVE,
    "DISTRIBUTED_CLAIM_TTL": COUNT,
    "DISTRIBUTED_LEASE": POSITIVE,
    "DISTRIBUTED_DOWNLOAD_HANDLER": CLASS_PATH,
    "DISTRIBUTED_SHIP_MAX_BYTES": COUNT,
}

OWNED: dict[str, str] = {
    # Derived from the config by the add-on (scraper/addon.py), or constants and config keys of
    # the runner that no crawl reads: given as a setting they would be ignored, or break the
    # component that reads the derived form (GITHUB_TOKEN is a Secret, not text).
    "COLLECTOR_SPIDER_SETTINGS": "write them under spiders.<name>.settings",
    "GITHUB_TOKEN": "the token is read from $GITHUB_TOKEN (github.token_env) or "
                    "github.token_file",
    "GITHUB_RATE_LIMITS": in_config("github.limits"),
    "GITHUB_TOKEN_FILE": in_config("github.token_file"),
    "ROUND_INTERVALS": in_config("spiders.<name>.round_interval"),
    "ROUND_INTERVAL": in_config("round_interval"),
    "STOP_TIMEOUT": in_config("stop_timeout"),
    "LOGS_KEEP_DAYS": in_config("logs_keep_days"),
    "CATALOG_INTERVAL": in_config("catalog_interval"),
    "HEALTH_FAILED_ROUNDS": in_config("health.failed_rounds"),
    "HEALTH_MAX_ROUND_INTERVALS": in_config("health.max_round"),
    "HEALTH_MAX_ROUND_SLACK": in_config("health.max_round"),
    "AUTOSCALE_MAX_USED_CPU_RATIO": in_config("autoscale.max_used_cpu_ratio"),
}
"""Settings given only through collector.yaml (or the environment): what to do instead."""

