"""Bad input, fuzzed: the config file, ``python -m runner``'s arguments, ``scrapy crawl -a``.

Every invalid input is exit status 2 and one line naming the problem, never a traceback; every
valid input is accepted. Property-based (hypothesis) in-process for many examples, and through
the real commands as subprocesses for a handful.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import runner.cli.main
import scraper.addon
from runner.core.argtypes import MAX_WORKERS
from scraper.config.collector import (
    PERIODS,
    SEARCH_SORTS,
    SPIDER_NAMES,
    TOP_LEVEL_KEYS,
    CollectorConfig,
    ConfigError,
    load_config,
    parse_config,
)
from scraper.utils.outcome import NOTHING_FETCHED_EXIT
from scraper.utils.units import parse_duration, parse_size
from tests.support.collector import REPO_ROOT, RUNNER, SCRAPY
from tests.support.incrawler import validate_crawl

LABEL = "collector.yaml"
FUNCTION_FIXTURES = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
DEAD_URL = "http://127.0.0.2:9"  # nothing listens: a config that slips through fails fast

# --- strategies: the config file ------------------------------------------------------------------

SAFE_CHARS = st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"))
NICE_TEXT = st.text(SAFE_CHARS, min_size=1, max_size=20)
URLS = st.builds(lambda scheme, host, port, path: f"{scheme}://{host}{port}{path}",
                 st.sampled_from(["http", "https"]),
                 st.sampled_from(["127.0.0.2", "example.org", "docs.example.org", "[::1]"]),
                 st.sampled_from(["", ":8080", ":9"]),
                 st.sampled_from(["", "/", "/docs/", "/a/b.html"]))
DURATIONS = st.one_of(
    st.integers(0, 10**7),
    st.floats(0, 1e7, allow_nan=False, allow_infinity=False),
    st.builds(lambda n, unit: f"{n}{unit}", st.integers(0, 10**4),
              st.sampled_from(["", "s", "m", "h", "d", "w", "M", "H"])),
)
SIZES = st.one_of(
    st.integers(1, 2**40),
    st.builds(lambda n, unit: f"{n}{unit}", st.integers(1, 4096),
              st.sampled_from(["", "K", "M", "G", "MB", "GiB", "kb", "t"])),
)
LANGUAGES = st.from_regex(r"[A-Za-z0-9%+._-]{0,12}", fullmatch=True)
QUERIES = NICE_TEXT.filter(lambda q: q.strip() != "")
SETTING_NAMES = st.from_regex(r"[A-Z][A-Z0-9_]{0,15}", fullmatch=True)
SETTING_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                           st.floats(allow_nan=False, allow_infinity=False), NICE_TEXT)
ENV_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)


def optional(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


LIMIT = st.fixed_dictionaries({"limit": st.integers(1, 10**6), "window": DURATIONS.filter(
    lambda d: parse_duration(d) > 0)})
VALID = optional(
    data_dir=st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,20}", fullmatch=True),
    github=optional(web_url=URLS, api_url=URLS, token_env=ENV_NAMES,
                    web_min_interval=st.floats(0, 1e6, allow_nan=False) | st.integers(0, 100),
                    limits=optional(core=LIMIT, search=LIMIT)),
    spiders=optional(
        trending=optional(weight=st.integers(0, 100), languages=st.lists(LANGUAGES, max_size=4),
                          periods=st.lists(st.sampled_from(PERIODS), max_size=3),
                          settings=st.dictionaries(SETTING_NAMES, SETTING_VALUES, max_size=3)),
        search=optional(weight=st.integers(0, 100), queries=st.lists(QUERIES, max_size=3),
                        sort=st.sampled_from(SEARCH_SORTS), per_page=st.integers(1, 100)),
        docs=optional(weight=st.integers(0, 100), start_urls=st.lists(URLS, max_size=3),
                      max_pages_per_site=st.integers(1, 10**9), refresh_after=DURATIONS),
    ),
    round_interval=DURATIONS, stop_timeout=DURATIONS, memory_budget=SIZES,
    logs_keep_days=st.integers(1, 10**6),
    notify=optional(webhook_url=URLS),
    redis_url=st.sampled_from(["redis://127.0.0.1:6379/0", "rediss://cache.example.org:6380",
                               "unix:///run/redis.sock"]),
)

NAN, INF = float("nan"), float("inf")
BAD_DURATIONS = ["soon", -1, NAN, INF, True, [], {}, "9" * 400, "5 minutes", "-3s"]
BAD_URLS = ["ftp://x.example/", "http://[::1", "http://a b/", "http://", 42, "example.org/x",
            "http://localhost:99999/", "http://a\x00b/", "http://a\nb/", None, ["http://x/"]]
INVALID: list[tuple[str, list[Any]]] = [
    ("round_interval", BAD_DURATIONS),
    ("stop_timeout", BAD_DURATIONS),
    ("memory_budget", ["lots", 0, -5, "0MB", "9" * 400 + "G", True, [], "1.5X", "2 GBs"]),
    ("logs_keep_days", [0, -1, 1.5, "3", True, None, NAN]),
    ("data_dir", ["", " x", 42, "a\x00b", "~nosuchuser-hc/x", "\ud800", "x\n", None, []]),
    ("github", ["https://github.com", [], 5]),
    ("github.web_url", BAD_URLS),
    ("github.api_url", BAD_URLS),
    ("github.token_env", ["1ABC", "A B", "", 5, "TOKEN\n", None]),
    ("github.web_min_interval", [-1, NAN, INF, "fast", True, None]),
    ("github.limits", ["x", {"core": {"limit": 0, "window": 60}}, {"core": {"limit": 5}},
                       {"search": {"limit": 5, "window": 0}}, {"other": {"limit": 1,
                                                                         "window": 1}}]),
    ("github.token", ["abc"]),
    ("spiders", ["all", [], 3]),
    ("spiders.stars", [{}]),
    ("spiders.trending.weight", [-1, 1.5, "two", True]),
    ("spiders.trending.languages", ["python", [3], ["py thon"], ["python\n"], [None]]),
    ("spiders.trending.periods", ["daily", ["hourly"], [None], ["Daily"]]),
    ("spiders.trending.settings", [["A"], {"lower": 1}, {"A B": 1}, {"X\n": 1}, "A=1"]),
    ("spiders.search.queries", ["q", [""], ["   "], [5], ["a\x00"], [None]]),
    ("spiders.search.sort", ["best", 1, None]),
    ("spiders.search.per_page", [0, 101, "10", 10.0, None]),
    ("spiders.docs.start_urls", ["http://x/", ["ftp://x/"], ["x"], [None], BAD_URLS[:3],
                                 ["https://bob:hunter2@docs.example.org/"], ["http://bob@x/"]]),
    ("spiders.docs.max_pages_per_site", [0, "many", 2.5]),
    ("spiders.docs.refresh_after", ["weekly", -5, NAN, INF]),
    ("spiders.docs.start_url", [["http://x/"]]),
    ("notify", ["http://x/", []]),
    ("notify.webhook_url", ["mailto:x@example.org", 5, "http://[::1"]),
    ("redis_url", ["http://x", "redis://", "redis://a b", 6379]),
    ("colour", ["blue"]),
]


@st.composite
def invalid_configs(draw: st.DrawFn) -> tuple[Any, str]:
    """A valid document with exactly one thing broken; returns (document, key path)."""
    document = draw(VALID)
    if draw(st.integers(0, 30)) == 0:
        return draw(st.sampled_from([[], ["data_dir"], "text", 42, True])), "(top level)"
    path, values = draw(st.sampled_from(INVALID))
    *parents, leaf = path.split(".")
    node = document
    for key in parents:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[leaf] = draw(st.sampled_from(values))
    return document, path


LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20),
    st.binary(max_size=8), st.dates(), st.datetimes(),
    st.sampled_from(["", "30m", "7d", "1.5G", "http://127.0.0.2:9/x/", "ftp://x", "http://[::1",
                     "~nosuchuser-hc", "daily", "stars", "python", "c++", "DOWNLOAD_DELAY",
                     "redis://x", "-1", "nan", ".inf", "a\x00b", "\ud800", "9" * 400]),
)
KEY_NAMES = sorted({*TOP_LEVEL_KEYS, *SPIDER_NAMES, "web_url", "api_url", "token_env",
                    "web_min_interval", "limits", "core", "search", "limit", "window", "weight",
                    "languages", "periods", "settings", "queries", "sort", "per_page",
                    "start_urls", "max_pages_per_site", "refresh_after", "webhook_url",
                    "DOWNLOAD_DELAY", "RETRY_TIMES"})
ANY_STRUCTURE = st.recursive(
    LEAVES,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.one_of(st.sampled_from(KEY_NAMES), st.text(max_size=10), st.integers(), st.none()),
        children, max_size=5),
    max_leaves=25,
)
# Shaped like the real file: the real keys at the real depths, anything at the leaves.
SHAPED = st.dictionaries(st.sampled_from(TOP_LEVEL_KEYS), st.one_of(
    ANY_STRUCTURE,
    st.dictionaries(st.sampled_from(SPIDER_NAMES), st.dictionaries(
        st.sampled_from(KEY_NAMES), ANY_STRUCTURE, max_size=4), max_size=3),
), max_size=6)


def dump(document: Any) -> str:
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)


def assert_one_line_error(exc: ConfigError) -> str:
    message = str(exc)
    assert "\n" not in message and "\r" not in message, repr(message)
    assert message.startswith(f"{LABEL}: "), message
    return message


def parse_or_error(text: str) -> CollectorConfig | str:
    """The config, or its error message; any other exception fails the test."""
    try:
        return parse_config(text, LABEL, base_dir=Path("/srv/collector"))
    except ConfigError as exc:
        return assert_one_line_error(exc)


# --- (a) the config file --------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.one_of(ANY_STRUCTURE, SHAPED))
def test_config_any_structure_is_a_config_or_one_line_error(document: Any) -> None:
    parse_or_error(dump(document))


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_config_any_text_is_a_config_or_one_line_error(text: str) -> None:
    parse_or_error(text)


@settings(max_examples=60, deadline=None, suppress_health_check=FUNCTION_FIXTURES)
@given(data=st.binary(max_size=200)
       | st.text(max_size=100).map(lambda t: t.encode("utf-8", "replace")))
def test_config_any_bytes_through_load_config(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "collector.yaml"
    path.write_bytes(data)
    try:
        load_config(path)
    except ConfigError as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith(f"{path}: "), message


@settings(max_examples=300, deadline=None)
@given(VALID)
def test_config_valid_documents_are_accepted(document: dict[str, Any]) -> None:
    config = parse_or_error(dump(document))
    assert isinstance(config, CollectorConfig), config
    if "round_interval" in document:
        assert config.round_interval == parse_duration(document["round_interval"])
    if "memory_budget" in document:
        assert config.memory_budget == parse_size(document["memory_budget"])
    if "data_dir" in document:
        assert config.data_dir == Path("/srv/collector") / Path(document["data_dir"]).expanduser()
    spiders = document.get("spiders", {})
    for name in SPIDER_NAMES:
        for key, value in spiders.get(name, {}).items():
            got = getattr(config.spider(name), key)
            if key == "refresh_after":
                assert got == parse_duration(value)
            elif isinstance(value, list):
                assert list(got) == value, key
            else:
                assert got == value, key
    for key in ("web_url", "api_url"):
        if key in document.get("github", {}):
            assert getattr(config.github, key) == document["github"][key].rstrip("/")


@settings(max_examples=400, deadline=None)
@given(invalid_configs())
def test_config_one_broken_key_is_named_in_one_line(case: tuple[Any, str]) -> None:
    document, path = case
    message = parse_or_error(dump(document))
    assert isinstance(message, str), f"accepted a config with a bad {path}: {document!r}"
    assert path in message, (path, message)


@pytest.mark.timeout(120)
# A few: what they add to the 400 above is the commands' path from the error to one line and
# exit 2, the same for every broken key.
@settings(max_examples=4, deadline=None, suppress_health_check=FUNCTION_FIXTURES,
          database=None)
@given(case=invalid_configs())
def test_bad_configs_through_the_real_commands(tmp_path: Path, case: tuple[Any, str]) -> None:
    document, path = case
    assume(isinstance(parse_or_error(dump(document)), str))
    if isinstance(document, dict):  # should it be accepted after all, it must not go online
        github = document.get("github")
        if isinstance(github, dict):
            github.setdefault("web_url", DEAD_URL)
            github.setdefault("api_url", DEAD_URL)
        document.setdefault("data_dir", str(tmp_path / "data"))
    config = tmp_path / "collector.yaml"
    config.write_text(dump(document), encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "COLLECTOR_CONFIG": str(config), "HOME": str(tmp_path)}
    crawl = subprocess.Popen([*SCRAPY, "crawl", "trending"], cwd=REPO_ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    status = subprocess.Popen([*RUNNER, "status"], cwd=REPO_ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for proc, prog in ((crawl, "scrapy crawl"), (status, "python -m runner")):
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, (prog, path, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1, (prog, err)
        assert "Traceback" not in err
        assert lines[0].startswith(f"{prog}: {config}: "), lines[0]
        assert path in lines[0], (path, lines[0])


# --- (b) python -m runner's arguments -------------------------------------------------------------

SUBCOMMANDS = ["run", "status", "stop"]
OPTIONS = ["--workers", "--spiders", "--once", "--memory-budget", "--config", "--json", "-h",
           "--help", "--bogus", "--work", "--", "-w"]
VALUES = st.one_of(
    st.integers(-5, 50).map(str),
    st.sampled_from(["0", "1", "6", "10000", "10001", "9" * 400, "1_000", "x", "", " 3 ",
                     "docs", "docs,search", "trending,nope", ",", "2G", "1MB", "0MB", "-1G",
                     "9" * 400 + "G", "nan", "1e3"]),
    st.text(SAFE_CHARS, max_size=10),
)
ARGV = st.lists(st.one_of(st.sampled_from(SUBCOMMANDS), st.sampled_from(OPTIONS), VALUES),
                max_size=7)
EXTRA = {name for name, _ in runner.cli.main.EXTRA_COMMANDS}  # watchdog, install-cron…: not here


class WouldStart(Exception):
    """The runner got past every check and would have forked: the fuzz must never get here."""


@pytest.fixture
def cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    good = tmp_path / "collector.yaml"
    good.write_text(dump({"data_dir": str(tmp_path / "data"),
                          "github": {"web_url": DEAD_URL, "api_url": DEAD_URL}}))
    bad = tmp_path / "bad.yaml"
    bad.write_text("round_interval: soon\n")
    monkeypatch.setenv("COLLECTOR_CONFIG", str(good))
    monkeypatch.chdir(tmp_path)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise WouldStart

    # no gc.freeze in pytest
    monkeypatch.setattr("runner.supervision.supervisor.preload", lambda: [])
    monkeypatch.setattr("runner.supervision.supervisor.Supervisor.run", refuse)
    monkeypatch.setattr("runner.core.pidfile.PidFile.acquire", refuse)
    return {"good": good, "bad": bad}


def reaches_run(argv: list[str]) -> argparse.Namespace | None:
    commands = ["run", "status", "stop", *EXTRA]
    try:
        args = runner.cli.main.build_parser().parse_args(
            runner.cli.main._with_default_command(argv, commands))
    except (runner.cli.main.UsageError, SystemExit):
        return None
    return args if args.command == "run" else None


def call_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = runner.cli.main.main(argv)
    except SystemExit as exc:
        out, err = capsys.readouterr()
        assert exc.code == 0, (argv, exc.code, err)  # only --help exits; errors return 2
        assert "usage:" in out, (argv, out)
        return 0, out, err
    out, err = capsys.readouterr()
    assert isinstance(code, int), (argv, code)
    return code, out, err


@settings(max_examples=400, deadline=None, suppress_health_check=FUNCTION_FIXTURES)
@given(argv=ARGV, config=st.sampled_from(["", "good", "bad", "missing", "dir"]))
def test_runner_cli_any_arguments(argv: list[str], config: str, cli_home: dict[str, Path],
                                  capsys: pytest.CaptureFixture[str]) -> None:
    assume(not EXTRA & set(argv))
    if config:
        path = {"good": cli_home["good"], "bad": cli_home["bad"], "dir": cli_home["good"].parent,
                "missing": cli_home["good"].parent / "missing.yaml"}[config]
        argv = [*argv, "--config", str(path)]
    args = reaches_run(argv)
    if args is not None:
        assume(not args.force)
        argv = [*argv, "--memory-budget", "1MB"]  # refused before anything starts
    code, _, err = call_main(argv, capsys)
    assert code in (0, 2, 3), (argv, code, err)  # 3: `status` with no runner running
    lines = err.strip().splitlines()
    if code == 2:
        assert len(lines) == 1, (argv, err)
        assert lines[0].startswith("python -m runner: "), (argv, err)
    else:
        assert len(lines) <= 1, (argv, err)  # `stop`: "no runner is running on …"
    assert "Traceback" not in err


def test_a_config_value_named_like_a_command_is_not_the_command(
        cli_home: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = call_main(["--config", "run", "--config", str(cli_home["good"]),
                              "--memory-budget", "1MB"], capsys)
    assert code == 2, err
    assert err.startswith("python -m runner: ") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


@settings(max_examples=200, deadline=None, suppress_health_check=FUNCTION_FIXTURES)
@given(value=st.one_of(st.integers(-10**6, 10**6).map(str), VALUES))
def test_runner_workers_values(value: str, cli_home: dict[str, Path],
                               capsys: pytest.CaptureFixture[str]) -> None:
    assume(not value.startswith("-") or value[1:].isdigit())  # "-h" is an option, not a value
    try:
        valid = 1 <= int(value) <= MAX_WORKERS
    except ValueError:
        valid = False
    code, out, err = call_main(["--workers", value, "--memory-budget", "1MB"], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    if valid:  # accepted: the plan is printed, then the 1 MB budget refuses it
        assert out.startswith("plan: "), (value, out, err)
        assert "refusing" in err or "nothing to run" in err, err
    else:
        assert "--workers" in err and not out, (value, err)


@pytest.mark.parametrize("args, needle", [
    (["--workers", "9" * 400], "at most 10000"),
    (["--workers", "2", "--spiders", ","], "give at least one spider"),
    (["--workers", "2", "--memory-budget", "9" * 400 + "G"], "is not a size"),
    (["status", "--json", "--bogus"], "--bogus"),
    (["--config"], "no such file"),
])
def test_runner_cli_subprocess(tmp_path: Path, args: list[str], needle: str) -> None:
    config = tmp_path / "collector.yaml"
    config.write_text(dump({"data_dir": str(tmp_path / "data")}))
    env = {"PATH": "/usr/bin:/bin", "COLLECTOR_CONFIG": str(config), "HOME": str(tmp_path)}
    result = subprocess.run([*RUNNER, *args], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert needle in result.stderr and "Traceback" not in result.stderr


# --- (c) scrapy crawl's -a arguments --------------------------------------------------------------

SHARDS = st.one_of(
    st.builds(lambda i, n: f"{i}/{n}", st.integers(-3, 40), st.integers(-3, 40)),
    st.sampled_from(["0/1", "00/01", " 1/2 ", "0/0", "1/1", "2/1", "-0/1", "+0/1", "0/+1",
                     "1/2/3", "0/1 ", "0 /1", "٠/١", "0/1\n", "", "/", "0/", "/1", "a/b",
                     "0.0/1", "0/1e3", "0x0/2", "0/" + "9" * 5000, "0/" + "9" * 30]),
    st.text(SAFE_CHARS, max_size=8),
)


def shard_is_valid(text: str) -> bool:
    """The spec: i/N in ASCII digits (blanks around allowed), N ≥ 1, 0 ≤ i < N."""
    parts = text.strip().split("/")
    if len(parts) != 2 or not all(p and p.isascii() and p.isdigit() for p in parts):
        return False
    try:
        index, count = int(parts[0]), int(parts[1])
    except ValueError:  # beyond int()'s digit limit
        return False
    return 0 <= index < count


@pytest.fixture
def crawl_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``scrapy crawl``'s own option parsing and validation, in-process, as cmdline.execute
    drives it — minus the per-shard lock, which this process would otherwise keep."""
    import scraper.commands.crawl as crawl_module

    config = tmp_path / "collector.yaml"
    config.write_text(dump({"data_dir": str(tmp_path / "data")}))
    monkeypatch.setenv("COLLECTOR_CONFIG", str(config))
    monkeypatch.setenv("SCRAPY_SETTINGS_MODULE", "scraper.settings")
    claimed: list[str] = []
    monkeypatch.setattr(crawl_module, "acquire_worker_lock",
                        lambda path, label: claimed.append(label))
    monkeypatch.setattr(scraper.addon, "_read", {})  # this test's config, not an earlier one

    def validate(argv: list[str]) -> crawl_module.Command:
        return validate_crawl(argv)

    validate.claimed = claimed  # type: ignore[attr-defined]
    return validate


@settings(max_examples=300, deadline=None, suppress_health_check=FUNCTION_FIXTURES)
@given(shard=SHARDS)
def test_crawl_shard_values(shard: str, crawl_command: Any,
                            capsys: pytest.CaptureFixture[str]) -> None:
    assume("\x00" not in shard)
    capsys.readouterr()
    try:
        cmd = crawl_command(["trending", "-a", f"shard={shard}"])
    except SystemExit as exc:
        err = capsys.readouterr().err
        assert not shard_is_valid(shard), (shard, err)
        assert exc.code == 2
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("scrapy crawl: -a shard="), (shard, err)
        return
    assert shard_is_valid(shard), f"accepted shard={shard!r}"
    index, count = (int(p) for p in shard.strip().split("/"))
    assert (cmd.shard.index, cmd.shard.count) == (index, count)
    assert crawl_command.claimed[-1] == f"trending {index}/{count}"


ARG_NAMES = st.one_of(st.sampled_from(["shard", "Shard", "shards", "name", "start_urls", "",
                                       "shard ", "-a", "s"]),
                      st.text(SAFE_CHARS, max_size=8))


@settings(max_examples=150, deadline=None, suppress_health_check=FUNCTION_FIXTURES)
@given(pairs=st.lists(st.tuples(ARG_NAMES, st.sampled_from(["0/1", "x", ""])), min_size=1,
                     max_size=3),
       with_equals=st.booleans())
def test_crawl_argument_names(pairs: list[tuple[str, str]], with_equals: bool,
                              crawl_command: Any, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["docs"]
    for name, value in pairs:
        argv += ["-a", f"{name}={value}" if with_equals else name]
    capsys.readouterr()
    try:
        crawl_command(argv)
    except SystemExit as exc:
        err = capsys.readouterr().err
        assert exc.code == 2
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("scrapy crawl: "), (argv, err)
        return
    # Accepted: only ever shard=, with a valid value (as Scrapy splits -a: at the first "=",
    # the last one of a name wins).
    raw = argv[2::2]
    assert all("=" in arg for arg in raw), argv
    spargs = dict(arg.split("=", 1) for arg in raw)
    assert set(spargs) == {"shard"} and shard_is_valid(spargs["shard"]), argv


@pytest.mark.timeout(120)
@pytest.mark.parametrize("extra, status", [
    (["-a", "shard=0/1"], NOTHING_FETCHED_EXIT),
    (["-a", "shard=1/3"], 0),
    (["-a", "shard=3/3"], 2),
    (["-a", "shard=٠/١"], 2),
    (["-a", "shard=0/" + "9" * 5000], 2),
    (["-a", "shard"], 2),
    (["-a", "shards=0/1"], 2),
    (["-a", "shard=0/1", "-a", "name=x"], 2),
    (["-s", "NOEQUALS"], 2),
    (["-o"], 2),
])
def test_crawl_arguments_subprocess(tmp_path: Path, extra: list[str], status: int) -> None:
    config = tmp_path / "collector.yaml"
    # The valid ones crawl a dead address: they run and finish, offline; a shard with a start
    # entry fetched nothing (exit 5), one with none had nothing to send (exit 0).
    config.write_text(dump({"data_dir": str(tmp_path / "data"),
                            "github": {"web_url": DEAD_URL, "api_url": DEAD_URL},
                            "spiders": {"trending": {"languages": [""], "periods": ["daily"],
                                                     "settings": {"RETRY_TIMES": 0}}}}))
    env = {"PATH": "/usr/bin:/bin", "COLLECTOR_CONFIG": str(config), "HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "trending", *extra],
                            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in result.stderr
    assert result.returncode == status, result.stderr
    if status == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("scrapy crawl: "), result.stderr


def test_no_fuzzed_value_is_silently_non_finite() -> None:
    """The units every config and CLI size/duration goes through refuse NaN and infinity."""
    for bad in (NAN, INF, "9" * 400):
        with pytest.raises(ValueError):
            parse_duration(bad)
    with pytest.raises(ValueError):
        parse_size("9" * 400 + "G")
    assert math.isfinite(parse_duration("7d"))
