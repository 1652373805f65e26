"""collector.yaml: validated on load; every mistake is one line and exit status 2.

Unit tests call :func:`parse_config` / :func:`load_config`; the end-to-end tests run the real
``scrapy crawl`` command and read its stderr and exit status.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scraper.config.collector import (
    CONFIG_ENV,
    CollectorConfig,
    ConfigError,
    GitHubConfig,
    load_config,
    parse_config,
)
from tests.support.collector import REPO_ROOT, SCRAPY, Collector
from tests.support.incrawler import refused_crawl

EXAMPLE = REPO_ROOT / "collector.example.yaml"

# (id, YAML text, key path, the value as the message must show it (or None), what is allowed)
INVALID = [
    ("unknown-top-key", "colour: blue\n", "colour", None, "expected one of data_dir, github"),
    ("unknown-nested-key", "spiders:\n  trending:\n    langs: [python]\n",
     "spiders.trending.langs", None,
     "expected one of weight, languages, periods, spoken_languages, archive_retention, "
     "developers, round_interval, settings"),
    ("unknown-spider", "spiders:\n  stars: {}\n", "spiders.stars", None,
     "expected one of trending, search, docs"),
    ("unknown-github-key", "github:\n  token: abc\n", "github.token", None, "token_env"),
    ("int-wrong-type", "spiders:\n  search:\n    per_page: ten\n", "spiders.search.per_page",
     "'ten'", "an integer from 1 to 100"),
    ("bool-is-not-int", "spiders:\n  docs:\n    max_pages_per_site: true\n",
     "spiders.docs.max_pages_per_site", "True", "an integer ≥ 1"),
    ("list-wrong-type", "spiders:\n  trending:\n    periods: daily\n",
     "spiders.trending.periods", "'daily'", "a list"),
    ("mapping-wrong-type", "github: https://github.com\n", "github", "'https://github.com'",
     "a mapping"),
    ("top-not-mapping", "- data_dir\n- github\n", "(top level)", "['data_dir', 'github']",
     "a mapping"),
    ("bad-url-scheme", "github:\n  api_url: ftp://api.github.com\n", "github.api_url",
     "'ftp://api.github.com'", "an http(s) URL"),
    ("bad-url-no-scheme", "spiders:\n  docs:\n    start_urls: [https://a.example/, b.example/x/]\n",
     "spiders.docs.start_urls[1]", "'b.example/x/'", "an http(s) URL"),
    ("bad-url-port", "github:\n  web_url: http://localhost:99999\n", "github.web_url",
     "'http://localhost:99999'", "valid port"),
    ("bad-url-type", "github:\n  web_url: 42\n", "github.web_url", "42", "an http(s) URL"),
    ("bad-period", "spiders:\n  trending:\n    periods: [daily, hourly]\n",
     "spiders.trending.periods[1]", "'hourly'", "is not one of daily, weekly, monthly"),
    ("bad-sort", "spiders:\n  search:\n    sort: popularity\n", "spiders.search.sort",
     "'popularity'", "one of stars, forks, help-wanted-issues, updated"),
    ("per-page-above", "spiders:\n  search:\n    per_page: 101\n", "spiders.search.per_page",
     "101", "an integer from 1 to 100"),
    ("per-page-zero", "spiders:\n  search:\n    per_page: 0\n", "spiders.search.per_page",
     "0", "an integer from 1 to 100"),
    ("bad-duration", "spiders:\n  docs:\n    refresh_after: a week\n",
     "spiders.docs.refresh_after", "'a week'", "a duration such as"),
    ("negative-duration", "round_interval: -5\n", "round_interval", "-5", "a duration such as"),
    ("bad-settings-key", "spiders:\n  docs:\n    settings:\n      download_delay: 1\n",
     "spiders.docs.settings.download_delay", "'download_delay'", "a Scrapy setting name"),
    ("settings-not-mapping", "spiders:\n  trending:\n    settings: [DOWNLOAD_DELAY]\n",
     "spiders.trending.settings", "['DOWNLOAD_DELAY']", "a mapping"),
    ("bad-language", "spiders:\n  trending:\n    languages: ['', 'c sharp']\n",
     "spiders.trending.languages[1]", "'c sharp'", "a GitHub language slug"),
    ("negative-weight", "spiders:\n  search:\n    weight: -1\n", "spiders.search.weight", "-1",
     "an integer ≥ 0"),
    ("bad-token-env", "github:\n  token_env: GITHUB TOKEN\n", "github.token_env",
     "'GITHUB TOKEN'", "an environment variable name"),
    ("empty-query", "spiders:\n  search:\n    queries: ['ok', '  ']\n",
     "spiders.search.queries[1]", "'  '", "a search query"),
    ("cpu-ratio-above-one", "autoscale:\n  max_used_cpu_ratio: 90\n",
     "autoscale.max_used_cpu_ratio", "90", "a share of the CPU from 0.05 to 1"),
    ("concurrency-zero", "autoscale:\n  min_concurrency: 0\n", "autoscale.min_concurrency",
     "0", "an integer from 1 to 10000"),
    ("concurrency-min-above-max", "autoscale:\n  min_concurrency: 8\n  max_concurrency: 4\n",
     "autoscale.min_concurrency", None, "8 is above max_concurrency 4"),
]
YAML_ERROR = "spiders:\n  trending:\n    periods: [daily, weekly\ndata_dir: x\n"


def expected_parts(label: str, case: tuple) -> list[str]:
    _, _, key_path, value, allowed = case
    parts = [f"{label}: {key_path}: ", allowed]
    if value is not None:
        parts.append(f": {value} ")
    return parts


# --- unit: parse_config / load_config ---------------------------------------------------------


@pytest.mark.parametrize("case", INVALID, ids=[c[0] for c in INVALID])
def test_parse_config_rejects_with_one_line(case: tuple) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(case[1], "collector.yaml")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("collector.yaml: ")
    for part in expected_parts("collector.yaml", case):
        assert part in message, (part, message)


def test_parse_config_bad_period_message_is_exact() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config("spiders:\n  trending:\n    periods: [daily, hourly]\n", "collector.yaml")
    assert str(raised.value) == (
        "collector.yaml: spiders.trending.periods[1]: 'hourly' is not one of daily, weekly, monthly"
    )


def test_parse_config_yaml_syntax_error_names_file_and_line() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(YAML_ERROR, "conf/collector.yaml")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("conf/collector.yaml: line ")
    assert "invalid YAML" in message


def test_defaults_without_any_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    config = load_config()
    assert config.source is None
    assert config.data_dir == tmp_path / "data"
    assert config.data_dir.is_absolute()
    assert config.github.web_url == "https://github.com"
    assert config.github.api_url == "https://api.github.com"
    assert config.github.token_env == "GITHUB_TOKEN"
    assert config.trending.languages == ("", "python", "rust", "go")
    assert config.trending.periods == ("daily", "weekly", "monthly")
    assert config.search.sort == "stars"
    assert config.search.per_page == 100
    assert config.search.queries
    assert all(url.startswith("https://") for url in config.docs.start_urls)
    assert config.docs.refresh_after == 7 * 86400
    assert config.round_interval is None
    assert [config.round_interval_of(name) for name in ("trending", "search", "docs")] == [
        3600, 3600, 21600]


def test_empty_file_is_defaults_with_data_dir_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "collector.yaml"
    path.parent.mkdir()
    path.write_text("")
    config = load_config(path)
    assert config.source == str(path)
    assert config.data_dir == path.parent / "data"
    assert config.github == GitHubConfig()
    assert config.docs.start_urls == CollectorConfig().docs.start_urls


def test_which_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--config PATH, else $COLLECTOR_CONFIG, else ./collector.yaml."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    (tmp_path / "collector.yaml").write_text("round_interval: 11\n")
    (tmp_path / "env.yaml").write_text("round_interval: 22\n")
    (tmp_path / "explicit.yaml").write_text("round_interval: 33\n")
    assert load_config().round_interval == 11
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "env.yaml"))
    assert load_config().round_interval == 22
    assert load_config(tmp_path / "explicit.yaml").round_interval == 33
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match=r"missing\.yaml: no such file \(named by \$"):
        load_config()


def test_example_config_loads_and_documents_the_defaults() -> None:
    config = load_config(EXAMPLE)
    defaults = CollectorConfig()
    for name in ("github", "trending", "search", "docs", "round_interval", "stop_timeout",
                 "memory_budget", "logs_keep_days", "notify", "redis_url", "health"):
        assert getattr(config, name) == getattr(defaults, name), name
    assert config.data_dir == EXAMPLE.parent / "data"
    # Every key of the example is explained: by a comment on its line or just above it, at
    # least once (a key repeated in each spider section is explained the first time).
    explained: dict[str, bool] = {}
    previous = ""
    for line in EXAMPLE.read_text().splitlines():
        stripped = line.strip().lstrip("# ")
        if ":" in stripped and not line.strip().startswith(("#", "- ")):  # not a list item
            key = stripped.split(":", 1)[0]
            commented = "#" in line or previous.startswith("#")
            explained[key] = explained.get(key, False) or commented
        if line.strip():
            previous = line.strip()
    assert {"data_dir", "web_url", "api_url", "token_env", "languages", "periods", "queries",
            "sort", "per_page", "start_urls", "max_pages_per_site", "refresh_after",
            "weight"} <= set(explained)
    # round_interval is commented out (its default differs per spider): documented all the same.
    assert EXAMPLE.read_text().count("# round_interval:") == 4
    assert [key for key, ok in explained.items() if not ok and key not in (
        "github", "spiders", "trending", "search", "docs")] == []


def test_valid_values_are_converted() -> None:
    config = parse_config(
        """
data_dir: out
github:
  web_url: http://127.0.0.1:8080/
  api_url: https://api.example.org
  token_env: MY_TOKEN
spiders:
  trending:
    languages: ["", c%23, c++, python]
    periods: [weekly, daily]
    settings: {DOWNLOAD_DELAY: 0.5, AUTOTHROTTLE_ENABLED: false}
  search:
    queries: [few]
    sort: updated
    per_page: 1
  docs:
    start_urls: [http://127.0.0.2:9000/site0/]
    max_pages_per_site: 1
    refresh_after: 1s
round_interval: 30m
""",
        "collector.yaml",
        base_dir=Path("/srv/hub"),
    )
    assert config.data_dir == Path("/srv/hub/out")
    assert config.github.web_url == "http://127.0.0.1:8080"  # trailing slash dropped
    assert config.github.token_env == "MY_TOKEN"
    assert config.trending.start_entries() == [
        (language, period, "") for language in ("", "c%23", "c++", "python")
        for period in ("weekly", "daily")]
    assert dict(config.trending.settings) == {"DOWNLOAD_DELAY": 0.5,
                                              "AUTOTHROTTLE_ENABLED": False}
    assert config.search.per_page == 1
    assert config.search.sort == "updated"
    assert config.docs.refresh_after == 1.0
    assert config.docs.max_pages_per_site == 1
    assert config.round_interval == 1800.0
    assert parse_config("spiders: {search: {per_page: 100}}", "c").search.per_page == 100


# --- end to end: `scrapy crawl trending` ----------------------------------------------------------


def _crawl(config_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_TOKEN")}
    env[CONFIG_ENV] = str(config_path)
    return subprocess.run([*SCRAPY, "crawl", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def assert_one_line_usage_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stdout == ""
    return lines[0]


@pytest.fixture(scope="module")
def invalid_runs(tmp_path_factory: pytest.TempPathFactory
                 ) -> dict[str, tuple[Path, subprocess.CompletedProcess[str]]]:
    """Every invalid config through ``scrapy crawl trending``'s own checks, in this process
    (tests/support/incrawler.py); the YAML error through the real command."""
    root = tmp_path_factory.mktemp("invalid-configs")
    paths = {}
    for case in [*INVALID, ("yaml-error", YAML_ERROR, None, None, None)]:
        path = root / case[0] / "collector.yaml"
        path.parent.mkdir()
        path.write_text(case[1])
        paths[case[0]] = path
    results = {name: refused_crawl(["trending"], path) for name, path in paths.items()
               if name != "yaml-error"}
    results["yaml-error"] = _crawl(paths["yaml-error"], "trending")
    return {name: (paths[name], results[name]) for name in paths}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", INVALID, ids=[c[0] for c in INVALID])
def test_crawl_with_invalid_config_exits_2_with_one_line(invalid_runs: dict, case: tuple
                                                         ) -> None:
    path, result = invalid_runs[case[0]]
    line = assert_one_line_usage_error(result)
    for part in expected_parts(str(path), case):
        assert part in line, (part, line)


@pytest.mark.timeout(120)
def test_crawl_bad_period_line(invalid_runs: dict) -> None:
    path, result = invalid_runs["bad-period"]
    line = assert_one_line_usage_error(result)
    assert line.endswith(
        f"{path}: spiders.trending.periods[1]: 'hourly' is not one of daily, weekly, monthly"
    )


@pytest.mark.timeout(120)
def test_crawl_yaml_syntax_error(invalid_runs: dict) -> None:
    path, result = invalid_runs["yaml-error"]
    line = assert_one_line_usage_error(result)
    assert f"{path}: line " in line
    assert "invalid YAML" in line


@pytest.mark.timeout(60)
def test_crawl_missing_config_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "collector.yaml"
    line = assert_one_line_usage_error(_crawl(missing, "trending"))
    assert str(missing) in line
    assert "no such file" in line
    assert CONFIG_ENV in line


BAD_SHARDS = ["4/4", "a/b"]
"""One out of range, one not ``i/N``: the command's path for each kind of refusal. The rule
itself, over every malformed shape, is ``test_sharding.py::test_parse_invalid``."""


@pytest.mark.timeout(120)
def test_crawl_bad_shard_values_exit_2(collector: Collector) -> None:
    collector.configure()
    with ThreadPoolExecutor(len(BAD_SHARDS)) as pool:
        results = list(pool.map(lambda s: collector.crawl("trending", s, timeout=60), BAD_SHARDS))
    for value, result in zip(BAD_SHARDS, results, strict=True):
        line = assert_one_line_usage_error(result)
        assert f"shard={value!r}" in line, line
        assert "0 ≤ i < N" in line
    # Nothing was started: no log, no lock, no items.
    assert not (collector.data_dir / "items").exists()
    assert not (collector.data_dir / "state").exists()


@pytest.mark.timeout(60)
def test_crawl_unknown_argument_and_spider_exit_2(collector: Collector) -> None:
    collector.configure()
    line = assert_one_line_usage_error(collector.crawl("trending", None, "-a", "foo=1"))
    assert "-a foo" in line and "shard" in line
    line = assert_one_line_usage_error(collector.crawl("docs", "0/2", "-a", "depth=3"))
    assert "-a depth" in line
    line = assert_one_line_usage_error(collector.crawl("nosuchspider"))
    assert "'nosuchspider'" in line
    assert "docs, search, trending" in line
    assert not (collector.data_dir / "state").exists()


@pytest.mark.timeout(90)
def test_spider_settings_from_config_and_cmdline_wins(collector: Collector, fake_docs_factory
                                                      ) -> None:
    """``spiders.docs.settings`` applies to docs; ``-s KEY=VALUE`` wins over it."""
    docs = fake_docs_factory(sites=1, pages=15)
    collector.configure(docs_urls=[f"{docs.url()}/site0/"],
                        spiders={"docs": {"settings": {"CLOSESPIDER_PAGECOUNT": 3}}})
    result = collector.crawl("docs")
    assert result.returncode == 0, result.stderr[-2000:]
    assert collector.stats("docs")["finish_reason"] == "closespider_pagecount"
    # A second shard of the same data dir, with the setting overridden on the command line.
    result = collector.crawl("docs", "0/2", "-s", "CLOSESPIDER_PAGECOUNT=0")
    assert result.returncode == 0, result.stderr[-2000:]
    stats = collector.stats("docs", "0/2")
    assert stats["finish_reason"] == "finished"
    assert stats["response_received_count"] > 3


def test_environment_is_resolved_once_into_the_config(tmp_path: Path) -> None:
    """The token (named by github.token_env) and the Redis URL come from the environment at load;
    the token prints as *** wherever the config or the settings made from it are shown."""
    from scraper.addon import config_settings

    path = tmp_path / "collector.yaml"
    path.write_text("github:\n  token_env: MY_TOKEN\nredis_url: redis://file:1/0\n")
    config = load_config(path, environ={"MY_TOKEN": "ghp_once", "GITHUB_TOKEN": "ghp_other"})
    assert config.github.token is not None and config.github.token.reveal() == "ghp_once"
    assert config.redis_url == "redis://file:1/0"
    assert load_config(path, environ={"COLLECTOR_REDIS_URL": "redis://env:2/0"}).redis_url == (
        "redis://env:2/0")
    assert load_config(path, environ={}).github.token is None
    settings = config_settings(config)
    assert settings["GITHUB_TOKEN"] == config.github.token
    assert "ghp_once" not in repr(config) + repr(settings) + str(settings)
    with pytest.raises(ConfigError, match=r"^\$COLLECTOR_REDIS_URL: 'nope' is not a Redis URL"):
        load_config(path, environ={"COLLECTOR_REDIS_URL": "nope"})


def test_round_interval_per_spider_wins_over_the_global_one() -> None:
    config = parse_config("round_interval: 90\nspiders:\n  docs: {round_interval: 2h}\n", "c.yaml")
    assert config.round_interval_of("docs") == 7200
    assert config.round_interval_of("trending") == config.round_interval_of("search") == 90
    assert config.shortest_round_interval == 90
    with pytest.raises(ConfigError, match=r"c\.yaml: spiders\.search\.round_interval: 'soon' "):
        parse_config("spiders:\n  search: {round_interval: soon}\n", "c.yaml")


# --- setting types, checked without importing Scrapy --------------------------------------------


def test_scrapys_defaults_read_from_its_source_are_its_flags_numbers_and_dicts() -> None:
    """The defaults the type check reads from Scrapy's ``default_settings.py`` without
    importing Scrapy: every flag, number and dict Scrapy's module defines, with its value."""
    import scrapy.settings.default_settings as scrapys

    from scraper.config.settingtypes import defaults_in_source

    def typed(values: dict) -> dict:
        return {name: value for name, value in values.items()
                if name.isupper() and isinstance(value, bool | int | float | dict)}

    expected = typed(vars(scrapys))
    assert len(expected) > 100
    assert typed(defaults_in_source(Path(scrapys.__file__))) == expected


def test_a_config_with_scrapy_settings_is_checked_without_importing_scrapy() -> None:
    """The commands cron runs (status, watchdog, size) read the config: checking its
    ``settings`` values does not import Scrapy (0.7-0.9 s of CPU each time, as
    ``python -m benchmarks.commands`` measures), and still finds a value Scrapy could not
    read."""
    program = """
import sys
from scraper.config.collector import ConfigError, parse_config
parse_config("spiders:\\n  docs:\\n    settings: {CONCURRENT_REQUESTS: 2, DOWNLOAD_DELAY: 0.5,"
             " AUTOTHROTTLE_ENABLED: false, DOWNLOAD_HANDLERS: {}}\\n", "c.yaml")
try:
    parse_config("spiders:\\n  docs:\\n    settings: {AUTOTHROTTLE_ENABLED: [1]}\\n", "c.yaml")
except ConfigError as exc:
    print(exc)
print("scrapy" in sys.modules)
"""
    result = subprocess.run([sys.executable, "-c", program], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "c.yaml: spiders.docs.settings.AUTOTHROTTLE_ENABLED: [1] is not 1 or 0 (true/false; "
        "default 1)", "False"]
