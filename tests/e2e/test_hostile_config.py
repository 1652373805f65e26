"""A config file replaced by something that is not one: a FIFO, a symlink to ``/dev/zero``, a
directory, a file past the cap. Every command refuses it in one line at once; a running runner
refuses it on SIGHUP without its loop ever waiting for it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.support.collector import Collector, peak_rss_mb, wait_for


def fifo(path: Path) -> str:
    os.mkfifo(path)
    return "is a FIFO (named pipe), not a regular file"


def dev_zero(path: Path) -> str:
    path.symlink_to("/dev/zero")
    return "is a character device, not a regular file"


def directory(path: Path) -> str:
    path.mkdir()
    return "is a directory, not a regular file"


def oversized(path: Path) -> str:
    path.write_bytes(b"# padding\n" * 110_000)  # valid YAML, 1.1 MB
    return "is larger than 1,048,576 bytes"


HOSTILE: dict[str, Callable[[Path], str]] = {
    "fifo": fifo, "dev-zero": dev_zero, "directory": directory, "oversized": oversized}


def replaced(path: Path, make: Callable[[Path], str]) -> str:
    """``path`` replaced at once (a rename, as an editor or an attacker would) by what ``make``
    makes; returns the reason the collector must give."""
    new = path.with_name(path.name + ".new")
    reason = make(new)
    os.replace(new, path)
    return reason


def one_line_refusal(result: subprocess.CompletedProcess[str], path: Path, reason: str) -> None:
    assert result.returncode != 0, result
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert str(path) in lines[0] and reason in lines[0], lines[0]


@pytest.mark.timeout(120)
def test_every_command_refuses_a_config_that_is_not_a_regular_file_in_one_line(
        tmp_path: Path) -> None:
    runs: list[tuple[Path, str, Callable[[], subprocess.CompletedProcess[str]]]] = []
    for name, make in HOSTILE.items():
        collector = Collector(tmp_path / name)
        reason = make(collector.config_path)
        # a start, status and the watchdog (cron's) for every kind; a crawl by hand for the
        # FIFO, the one that used to hang it
        for args in (["--once", "--workers", "1"], ["status"], ["watchdog"]):
            runs.append((collector.config_path, reason,
                         lambda c=collector, a=args: c.runner(*a, timeout=60)))
        if name == "fifo":
            runs.append((collector.config_path, reason,
                         lambda c=collector: c.crawl("trending", timeout=60)))
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda run: run[2](), runs))
    for (path, reason, _), result in zip(runs, results, strict=True):
        one_line_refusal(result, path, reason)


def status_updated_at(collector: Collector) -> float:
    path = collector.data_dir / "state" / "status.json"
    try:
        return float(json.loads(path.read_text())["runner"]["updated_at"])
    except (OSError, ValueError, KeyError):
        return 0.0


def runner_log(collector: Collector) -> str:
    path = collector.data_dir / "logs" / "runner.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


@pytest.mark.timeout(150)
def test_sighup_with_a_fifo_or_dev_zero_is_refused_and_the_loop_never_waits(
        tmp_path: Path, fake_docs_factory: Any) -> None:
    docs = fake_docs_factory(sites=1, pages=3)
    collector = Collector(tmp_path / "c")
    collector.configure(docs_urls=[f"{docs.url()}/site0/"], round_interval=0.5,
                        catalog_interval=0)
    valid = collector.config_path.read_bytes()
    runner = collector.start_runner("--workers", "1", "--spiders", "docs")
    try:
        wait_for(lambda: status_updated_at(collector), 60, "the runner's status")
        for n, make in enumerate((fifo, dev_zero), start=1):
            reason = replaced(collector.config_path, make)
            runner.send_signal(signal.SIGHUP)
            sent = status_updated_at(collector)
            wait_for(lambda r=reason, n=n: runner_log(collector).count("reload refused") == n
                     and r in runner_log(collector), 30, f"the refusal: {reason}")
            # status goes on being written: the loop did not wait for the file
            wait_for(lambda s=sent: status_updated_at(collector) > s + 2, 20, "a later status")
        collector.config_path.unlink()
        collector.config_path.write_bytes(valid.replace(b"round_interval: 0.5",
                                                        b"round_interval: 0.6"))
        runner.send_signal(signal.SIGHUP)
        wait_for(lambda: "reload: round_interval changed" in runner_log(collector), 30,
                 "the reload of a regular file again")
        peak = peak_rss_mb(runner.pid)
        assert runner.poll() is None
    finally:
        runner.send_signal(signal.SIGTERM)
        try:
            runner.wait(timeout=30)
        except subprocess.TimeoutExpired:
            runner.kill()
    assert runner.returncode == 0
    assert peak is not None and peak < 300, peak
    lines = [line for line in runner_log(collector).splitlines() if "reload" in line]
    assert len(lines) == 3, lines
    assert all(line.endswith("the running config stays") for line in lines[:2]), lines
