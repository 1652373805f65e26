"""The config is read once per run and reloaded only on purpose (SIGHUP, ``runner reload``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from runner.core.resolved import config_record
from scraper.config.collector import ConfigError, load_config, load_config_record, parse_config
from tests.support.collector import Collector, wait_for

COUNTER = textwrap.dedent("""\
    # Counts scraper.config.collector.load_config calls per process, for tests/e2e/test_reload.py.
    import os

    if os.environ.get("LOAD_CONFIG_COUNT"):
        import scraper.config.collector

        _load = scraper.config.collector.load_config

        def load_config(*args, **kwargs):
            with open(os.environ["LOAD_CONFIG_COUNT"], "a") as out:
                out.write(f"{os.getpid()}\\n")
            return _load(*args, **kwargs)

        scraper.config.collector.load_config = load_config
""")


def status(collector: Collector) -> dict[str, Any]:
    path = collector.data_dir / "state" / "status.json"
    return json.loads(path.read_text()) if path.exists() else {}


def rounds(collector: Collector) -> list[int]:
    return [w["rounds"] for w in status(collector).get("workers", [])]


def runner_log(collector: Collector) -> str:
    path = collector.data_dir / "logs" / "runner.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def stop(runner: subprocess.Popen[str]) -> None:
    if runner.poll() is None:
        runner.send_signal(signal.SIGTERM)
        try:
            runner.wait(timeout=30)
        except subprocess.TimeoutExpired:
            runner.kill()


def docs_sites(docs: Any, n: int) -> list[str]:
    return [f"{docs.url()}/site{k}/" for k in range(n)]


def one_docs_worker(tmp_path: Path, docs: Any, round_interval: float = 0.2
                    ) -> tuple[Collector, subprocess.Popen[str]]:
    """A runner of one docs worker on the first site, after its first round."""
    collector = Collector(tmp_path / "c")
    collector.configure(docs_urls=docs_sites(docs, 1), round_interval=round_interval,
                        catalog_interval=0)
    runner = collector.start_runner("--workers", "1", "--spiders", "docs")
    try:
        wait_for(lambda: rounds(collector) and rounds(collector)[0] >= 1, 60, "a first round")
    except BaseException:
        stop(runner)
        raise
    return collector, runner


@pytest.mark.timeout(120)
def test_load_config_runs_once_per_runner_over_three_rounds_of_four_workers(
        tmp_path: Path, fake_docs_factory: Any) -> None:
    """The workers run on the runner's validated object: nothing but the parent reads the
    file, however many rounds and workers (the catalog child is off here: it is no worker)."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(COUNTER)
    calls = tmp_path / "calls"
    docs = fake_docs_factory(sites=4, pages=3)
    collector = Collector(tmp_path / "c")
    collector.configure(docs_urls=docs_sites(docs, 4), round_interval=0.2, catalog_interval=0,
                        autoscale={"min_concurrency": 4})
    path = os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))
    runner = collector.start_runner("--workers", "4", "--spiders", "docs",
                                    env=collector.env(PYTHONPATH=path,
                                                      LOAD_CONFIG_COUNT=str(calls)))
    try:
        wait_for(lambda: (r := rounds(collector)) and len(r) == 4 and min(r) >= 3, 90,
                 "3 rounds of 4 workers")
    finally:
        stop(runner)
    assert runner.returncode == 0, runner.stderr.read() if runner.stderr else ""
    assert calls.read_text().split() == [str(runner.pid)]
    assert len(collector.items("docs")) >= 4 * 3  # every worker collected in its first round


@pytest.mark.timeout(120)
def test_data_dir_edited_mid_run_cannot_split_the_runner_from_its_workers(
        tmp_path: Path, fake_docs_factory: Any) -> None:
    collector, runner = one_docs_worker(tmp_path, fake_docs_factory(sites=1, pages=3))
    elsewhere = tmp_path / "elsewhere"
    try:
        collector.update_config({"data_dir": str(elsewhere)})
        done = rounds(collector)[0]
        wait_for(lambda: rounds(collector)[0] >= done + 2, 60, "two rounds after the edit")
        assert not elsewhere.exists()  # no item, store, lock or state went there
        runner.send_signal(signal.SIGHUP)
        wait_for(lambda: "reload refused" in runner_log(collector), 30, "the refusal")
        done = rounds(collector)[0]
        wait_for(lambda: rounds(collector)[0] >= done + 1, 60, "a round after the refusal")
        assert status(collector)["runner"]["pid"] == runner.pid
        assert status(collector)["runner"]["data_dir"] == str(collector.data_dir)
    finally:
        stop(runner)
    assert not elsewhere.exists()
    refused = [line for line in runner_log(collector).splitlines() if "reload" in line]
    assert len(refused) == 1 and "data_dir changed" in refused[0], refused
    assert "needs a restart" in refused[0]


@pytest.mark.timeout(120)
def test_sighup_with_a_new_docs_site_gets_it_crawled_next_round(
        tmp_path: Path, fake_docs_factory: Any) -> None:
    docs = fake_docs_factory(sites=2, pages=3)
    collector, runner = one_docs_worker(tmp_path, docs, round_interval=0.5)
    new_site = f"{docs.url()}/site1/"
    try:
        assert not [i for i in collector.items("docs") if i["url"].startswith(new_site)]
        collector.update_config({"spiders": {"docs": {"start_urls": docs_sites(docs, 2)}}})
        runner.send_signal(signal.SIGHUP)
        wait_for(lambda: [i for i in collector.items("docs") if i["url"].startswith(new_site)],
                 60, "an item of the new site")
    finally:
        stop(runner)
    lines = [line for line in runner_log(collector).splitlines() if "reload" in line]
    assert len(lines) == 1 and "docs.start_urls changed" in lines[0], lines
    # the resolved record the runner's exec'd children read follows the reload
    record = json.loads((collector.data_dir / "state" / "config.json").read_text())
    assert record["spiders"]["docs"]["start_urls"] == docs_sites(docs, 2)


@pytest.mark.timeout(120)
def test_sighup_with_a_broken_file_keeps_the_running_config_and_says_so_once(
        tmp_path: Path, fake_docs_factory: Any) -> None:
    collector, runner = one_docs_worker(tmp_path, fake_docs_factory(sites=1, pages=3))
    try:
        collector.config_path.write_text("round_interval: [oops\n")
        runner.send_signal(signal.SIGHUP)
        wait_for(lambda: "reload refused" in runner_log(collector), 30, "the refusal")
        done = rounds(collector)[0]
        wait_for(lambda: rounds(collector)[0] >= done + 2, 60, "rounds on the running config")
        assert runner.poll() is None
    finally:
        stop(runner)
    assert runner.returncode == 0
    lines = [line for line in runner_log(collector).splitlines() if "reload" in line]
    assert len(lines) == 1, lines
    assert "collector.yaml: line 2, column 1: invalid YAML" in lines[0]
    assert lines[0].endswith("the running config stays")


@pytest.mark.timeout(120)
def test_runner_reload_command_prints_what_changed(tmp_path: Path,
                                                   fake_docs_factory: Any) -> None:
    idle = Collector(tmp_path / "idle")
    idle.configure()
    assert idle.runner("reload").returncode == 2  # no runner: one line, exit 2
    collector, runner = one_docs_worker(tmp_path, fake_docs_factory(sites=1, pages=3))
    try:
        collector.update_config({"round_interval": 5, "health": {"failed_rounds": 7}})
        changed = collector.runner("reload")
        assert changed.returncode == 0, changed.stderr
        assert changed.stdout.startswith("reload: round_interval, health.failed_rounds changed")
        assert status(collector)["runner"]["round_interval"] == 5 or wait_for(
            lambda: status(collector)["runner"]["round_interval"] == 5, 10, "new status")
        same = collector.runner("reload")
        assert (same.returncode, same.stdout.strip()) == (0, "reload: the config is unchanged")
        collector.update_config({"round_interval": -1})
        broken = collector.runner("reload")  # checked before the runner is asked
        assert (broken.returncode, broken.stdout) == (2, "")
        assert "round_interval: -1 is not a duration" in broken.stderr
        assert broken.stderr.count("\n") == 1
        assert "refused" not in runner_log(collector)
    finally:
        stop(runner)


def test_resolved_record_reads_back_as_the_config_without_its_secrets(tmp_path: Path) -> None:
    """state/config.json is collector.yaml's shape: load_config reads it back to the same
    config, less the token (from the environment again), the Redis password and the webhook."""
    path = tmp_path / "collector.yaml"
    path.write_text(textwrap.dedent("""\
        round_interval: 90s
        memory_budget: 1 GB
        redis_url: redis://:hunter2@127.0.0.1:6379/0
        notify: {webhook_url: "https://hooks.example/T0/secret"}
        github: {limits: {core: {limit: 100, window: 1h}}}
        spiders:
          docs: {start_urls: ["https://a.example/"], settings: {DOWNLOAD_DELAY: 1}}
          trending: {languages: ["", "c%23"]}
        health: {max_round: 2h}
        autoscale: {max_concurrency: 3}
    """))
    config = load_config(path, environ={"GITHUB_TOKEN": "ghp_secret"})
    text = json.dumps(config_record(config))
    assert "ghp_secret" not in text and "hunter2" not in text and "T0/secret" not in text
    back = parse_config(text, "config.json")
    for name in ("data_dir", "trending", "search", "docs", "round_interval", "memory_budget",
                 "health", "autoscale", "catalog_interval", "stop_timeout"):
        assert getattr(back, name) == getattr(config, name), name
    assert back.github.limits == config.github.limits and back.github.token is None
    record = tmp_path / "config.json"
    record.write_text(text)
    # status and the watchdog read the record as JSON: the very config the YAML path gives
    assert load_config_record(record, environ={}) == load_config(record, environ={})


def test_a_bad_resolved_record_is_refused_as_the_yaml_path_refuses_it(tmp_path: Path) -> None:
    record = tmp_path / "config.json"
    for text, says in (('{"round_interval": -1}', "round_interval: -1 is not a duration"),
                       ('{"spiders": {"dogs": {}}}', "dogs"), ("[1, 2]", ""),
                       ('{"round_interval": ', "invalid JSON")):
        record.write_text(text)
        with pytest.raises(ConfigError) as as_json:
            load_config_record(record, environ={})
        assert says in str(as_json.value) and "\n" not in str(as_json.value)
        if says != "invalid JSON":
            with pytest.raises(ConfigError) as as_yaml:
                load_config(record, environ={})
            assert str(as_json.value) == str(as_yaml.value)


def test_status_and_watchdog_judge_by_the_runs_config_not_an_unreloaded_edit(
        tmp_path: Path) -> None:
    from runner.core.resolved import run_config, write_resolved
    from scraper.utils.layout import DataLayout

    path = tmp_path / "collector.yaml"
    path.write_text("round_interval: 60\nhealth: {failed_rounds: 3}\n")
    running = load_config(path, environ={})
    assert run_config(running) is running  # no run yet: the file's
    write_resolved(DataLayout(running.data_dir), running)
    path.write_text("round_interval: 5\nhealth: {failed_rounds: 9}\n"
                    "notify: {webhook_url: 'http://127.0.0.1:1/hook'}\n")
    edited = load_config(path, environ={})
    judged = run_config(edited)
    assert (judged.round_interval, judged.health.failed_rounds) == (60, 3)
    assert judged.notify == edited.notify  # where to say it is the file's, never recorded
