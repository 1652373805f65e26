"""``github.token_file``: the token for processes started without ``$GITHUB_TOKEN`` (cron's
watchdog, a systemd unit), from a file only its owner can read."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import psutil
import pytest

from scraper.budget.limits import identity_for_token, identity_label
from scraper.utils.layout import DataLayout
from scraper.utils.statefile import read_json
from tests.support.collector import Collector, wait_for

TOKEN = "ghp_read_from_the_file"


def token_file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "secrets" / "github-token"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def runner_pid(collector: Collector) -> int | None:
    status = read_json(DataLayout(collector.data_dir).status_file) or {}
    return status.get("runner", {}).get("pid")


@pytest.mark.timeout(180)
def test_a_runner_crons_watchdog_restarts_has_the_token_from_the_file(
        collector: Collector, fake_github: Any, tmp_path: Path) -> None:
    # systemd's EnvironmentFile shape: the same file serves a unit and the config.
    secret = token_file(tmp_path, f"# for hubcollect\nGITHUB_TOKEN={TOKEN}\n")
    collector.configure(github=fake_github, stop_timeout=3,
                        spiders={"search": {"queries": ["topic:web-scraping"],
                                            "complete": False}})
    collector.update_config({"github": {"token_file": str(secret)}})
    crontab = collector.home / "crontab"
    installed = collector.runner("install-cron", "--crontab-file", str(crontab),
                                 env=collector.env(GITHUB_TOKEN="ghp_this_shell"))
    assert (installed.returncode, installed.stderr) == (0, "")  # no "runs anonymously" warning
    watchdog = next(line for line in crontab.read_text().splitlines()
                    if "watchdog.sh" in line).split(" ", 5)[5]

    first = collector.start_runner("--workers", "1", "--spiders", "search")  # no $GITHUB_TOKEN
    restarted = None
    try:
        wait_for(lambda: runner_pid(collector) == first.pid, 60, "the first runner's status")
        workers = [child.pid for child in psutil.Process(first.pid).children()]
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        wait_for(lambda: not any(psutil.pid_exists(p) for p in workers), 10, "its workers gone")
        seen = len(fake_github.stats()["requests"])
        # What cron gives a job: no token in the environment.
        bare = {"PATH": "/usr/bin:/bin", "HOME": str(collector.home.parent), "SHELL": "/bin/sh"}
        done = subprocess.run(["/bin/sh", "-c", watchdog], cwd=collector.home.parent, env=bare,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == "collector restarted: 1 worker", done.stdout
        restarted = runner_pid(collector)
        wait_for(lambda: any(r["path"] == "/search/repositories"
                             for r in fake_github.stats()["requests"][seen:]), 60,
                 "the restarted runner's search")
        status = collector.runner("status", "--json")
    finally:
        for pid in {first.pid, restarted} - {None}:
            if pid and psutil.pid_exists(pid):
                psutil.Process(pid).send_signal(signal.SIGTERM)
        if restarted:
            wait_for(lambda: not psutil.pid_exists(restarted), 60, "the restarted runner to stop")
    searched = [r for r in fake_github.stats()["requests"][seen:]
                if r["path"] == "/search/repositories"]
    assert searched and all(r["identity"] == f"Bearer {TOKEN}" for r in searched), searched
    label = identity_label(identity_for_token(TOKEN))
    budget = json.loads(status.stdout)["budget"]  # the runner's identity's rows
    assert budget and {row["identity"] for row in budget} == {label}, budget
    assert TOKEN not in status.stdout + (collector.data_dir / "logs" / "runner.log").read_text()


@pytest.mark.parametrize(("text", "mode", "problem"), [
    (f"{TOKEN}\n", 0o644, "is readable by others than its owner (mode 0644); chmod 600 {path}"),
    ("", 0o600, ": holds no token; expected the token alone on one line, or a line "
                "GITHUB_TOKEN=…"),
    ("OTHER_TOKEN=x\n", 0o400, ": holds no token; expected the token alone on one line, or a "
                               "line GITHUB_TOKEN=…"),
])
def test_a_token_file_others_can_read_or_without_a_token_is_one_line_and_exit_2(
        collector: Collector, tmp_path: Path, text: str, mode: int, problem: str) -> None:
    path = token_file(tmp_path, text, mode)
    collector.configure(docs_urls=["http://127.0.0.1:9/"])
    collector.update_config({"github": {"token_file": str(path)}})
    line = (f"{collector.config_path}: github.token_file: {path}"
            f"{' ' if problem.startswith('is') else ''}{problem.format(path=path)}\n")
    crawl = collector.crawl("search")
    assert (crawl.returncode, crawl.stderr) == (2, "scrapy crawl: " + line)
    once = collector.runner("--once", "--workers", "1", "--spiders", "docs")
    assert (once.returncode, once.stdout, once.stderr) == (2, "", "python -m runner: " + line)
    path.unlink()
    missing = collector.runner("status")
    assert (missing.returncode, missing.stderr) == (
        2, f"python -m runner: {collector.config_path}: github.token_file: {path}: no such "
           "file\n")


def test_the_environment_wins_over_the_file(collector: Collector, fake_github: Any,
                                            tmp_path: Path) -> None:
    path = token_file(tmp_path, f"{TOKEN}\n")
    collector.configure(github=fake_github, spiders={"search": {"queries": ["topic:x"],
                                                                "complete": False}})
    collector.update_config({"github": {"token_file": str(path)}})
    crawl = collector.crawl("search", env=collector.env(GITHUB_TOKEN="ghp_from_the_shell"))
    assert crawl.returncode == 0, crawl.stderr[-2000:]
    identities = {r["identity"] for r in fake_github.stats()["requests"]
                  if r["path"] == "/search/repositories"}
    assert identities == {"Bearer ghp_from_the_shell"}
