"""A setting's value, not only its type, is checked where it is given (``-s``, a spider's
``settings:``, the runner's start): one line naming the setting, the value and what would be
right, exit 2. A worker that fails anyway says why in ``status`` and runner.log."""

from __future__ import annotations

import signal

import pytest

import scraper.settings as project_settings
from scraper.config.settingrules import OWNED, RULES
from scraper.config.settingtypes import setting_default, setting_problem
from scraper.utils.layout import DataLayout
from scraper.utils.statefile import read_json
from tests.support.collector import Collector, wait_for


def project_setting_names() -> list[str]:
    return [name for name in vars(project_settings) if name.isupper()]


def test_every_setting_of_the_project_has_a_rule_that_takes_its_default() -> None:
    """A flag's type is its whole rule; every other setting scraper/settings.py defines has a
    value rule (or is one the config owns), and its own default passes it."""
    missing = [name for name in project_setting_names()
               if not isinstance(getattr(project_settings, name), bool)
               and name not in RULES and name not in OWNED]
    assert missing == []
    refused = {name: setting_problem(name, setting_default(name)) for name in RULES
               if setting_problem(name, setting_default(name))}
    assert refused == {}
    assert not set(RULES) & set(OWNED)
    assert set(RULES) | set(OWNED) <= set(project_setting_names())


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("ITEMSTORE_COMPRESS", "zip", "one of '' (none), 'gzip' (default '')"),
    ("ITEMSTORE_SEGMENT_SECONDS", -5, "a number ≥ 0 (default 3600)"),
    ("SEARCH_PER_PAGE", 500, "an integer from 1 to 100 (default 100)"),
    ("LOG_LEVEL", "LOUD", "a log level: CRITICAL, ERROR, WARNING, INFO, DEBUG, NOTSET "
                          "(default 'INFO')"),
])
def test_a_wrong_value_of_the_right_type_is_one_line_and_exit_2(
        collector: Collector, name: str, value: object, expected: str) -> None:
    collector.configure(docs_urls=["http://127.0.0.1:9/"])
    crawl = collector.crawl("search", None, "-s", f"{name}={value}")
    assert (crawl.returncode, crawl.stderr) == (
        2, f"scrapy crawl: -s {name}={str(value)!r} is not valid: expected {expected}\n")

    collector.configure(docs_urls=["http://127.0.0.1:9/"],
                        spiders={"search": {"settings": {name: value}}})
    line = (f"{collector.config_path}: spiders.search.settings.{name}: {value!r} is not "
            f"{expected}\n")
    crawl = collector.crawl("search")
    assert (crawl.returncode, crawl.stderr) == (2, "scrapy crawl: " + line)
    once = collector.runner("--once", "--workers", "1", "--spiders", "search")
    assert (once.returncode, once.stdout, once.stderr) == (2, "", "python -m runner: " + line)
    assert not collector.log("search")  # nothing started


def test_a_setting_the_config_owns_is_refused_with_what_to_do_instead(
        collector: Collector) -> None:
    collector.configure(docs_urls=["http://127.0.0.1:9/"])
    crawl = collector.crawl("search", None, "-s", "GITHUB_TOKEN=ghp_abc")
    assert (crawl.returncode, crawl.stderr) == (
        2, "scrapy crawl: -s GITHUB_TOKEN: not a setting to give; the token is read from "
           "$GITHUB_TOKEN (github.token_env) or github.token_file\n")
    assert "ghp_abc" not in crawl.stderr + crawl.stdout
    collector.configure(docs_urls=["http://127.0.0.1:9/"],
                        spiders={"docs": {"settings": {"STOP_TIMEOUT": 5}}})
    once = collector.runner("--once", "--workers", "1", "--spiders", "docs")
    assert (once.returncode, once.stderr) == (
        2, f"python -m runner: {collector.config_path}: spiders.docs.settings.STOP_TIMEOUT: "
           "not a setting to give; set stop_timeout in collector.yaml\n")


BROKEN_PIPELINE = {"ITEM_PIPELINES": {"pipelines.nosuch.Store": 900}}
"""A class path that passes every check and does not import: the worker can only fail."""
CAUSE = "ModuleNotFoundError: No module named 'pipelines.nosuch'"


def test_a_crawl_that_cannot_start_says_why_on_the_terminal(collector: Collector) -> None:
    collector.configure(docs_urls=["http://127.0.0.1:9/"],
                        spiders={"docs": {"settings": BROKEN_PIPELINE}})
    crawl = collector.crawl("docs")
    log = collector.data_dir / "logs" / "docs-0of1.log"
    assert (crawl.returncode, crawl.stderr) == (
        1, f"scrapy crawl: docs 0/1 could not start: {CAUSE} (log: {log})\n")
    assert "Traceback" in log.read_text()


@pytest.mark.timeout(120)
def test_a_worker_that_dies_has_its_cause_in_status_and_the_runners_log(
        collector: Collector) -> None:
    collector.configure(docs_urls=["http://127.0.0.1:9/"], stop_timeout=3,
                        spiders={"docs": {"settings": BROKEN_PIPELINE}})
    runner_log = collector.data_dir / "logs" / "runner.log"
    status_file = DataLayout(collector.data_dir).status_file
    runner = collector.start_runner("--workers", "1", "--spiders", "docs")
    try:
        # Two crashes in a row: the second round's cause is its own, not "exit 1; exit 1".
        wait_for(lambda: runner_log.exists()
                 and runner_log.read_text().count(f"(exit 1: {CAUSE}); restarting") >= 2,
                 90, "two restarts logged with their cause")
        wait_for(lambda: (read_json(status_file) or {}).get("workers", [{}])[0].get("restarts",
                                                                                    0) >= 2,
                 30, "status.json to show the restarts")
        status = collector.runner("status")
    finally:
        runner.send_signal(signal.SIGTERM)
        _out, err = runner.communicate(timeout=60)
    assert status.returncode == 0, status.stderr
    worker = status.stdout.split("docs 0/1", 1)[1].splitlines()
    assert worker[1].strip() == f"exit 1: {CAUSE}", status.stdout
    assert f"docs 0/1 ended (exit 1: {CAUSE}); restarting in" in err
