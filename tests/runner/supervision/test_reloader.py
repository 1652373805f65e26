"""A reload reads the config off the runner's loop: the loop polls, and a read that hangs is
refused after the timeout while the loop goes on."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from runner.supervision.plan import Plan
from runner.supervision.reload import read_result
from runner.supervision.reloader import ConfigReloader
from scraper.config.collector import CollectorConfig, ConfigError
from scraper.utils.layout import DataLayout


def poll_until(reloader: ConfigReloader, config: CollectorConfig, timeout: float = 5.0
               ) -> tuple[CollectorConfig, Plan] | None:
    deadline = time.monotonic() + timeout
    change = reloader.poll(config)  # the first turn after the SIGHUP starts the read
    while change is None and reloader.reading and time.monotonic() < deadline:
        time.sleep(0.01)
        change = reloader.poll(config)
    return change


def test_a_read_that_hangs_is_refused_after_the_timeout_and_the_loop_never_waits(
        tmp_path: Path) -> None:
    layout = DataLayout(tmp_path)
    layout.state_dir.mkdir(parents=True)
    release = threading.Event()
    running = CollectorConfig(data_dir=tmp_path)

    def hung_read() -> CollectorConfig:
        release.wait(30)
        return running

    woken = threading.Event()
    reloader = ConfigReloader(layout, hung_read, lambda config: Plan.__new__(Plan),
                              wake=woken.set, timeout=0.3)
    reloader.request()
    started = time.monotonic()
    assert reloader.poll(running) is None and reloader.reading
    polls = 0
    while reloader.reading:
        assert reloader.poll(running) is None
        polls += 1
        time.sleep(0.01)
    assert polls > 10  # each turn of the loop came back at once while the read hung
    assert time.monotonic() - started < 5
    result = read_result(layout)
    assert result is not None and not result.ok
    assert result.message == ("reload refused: reading the config took longer than 0.3 s; the "
                              "running config stays")
    release.set()  # the abandoned read ends late: it changes nothing
    assert woken.wait(5)
    assert reloader.poll(running) is None and read_result(layout) == result


def test_a_read_that_fails_is_one_refusal_and_a_new_request_reads_again(tmp_path: Path) -> None:
    layout = DataLayout(tmp_path)
    layout.state_dir.mkdir(parents=True)
    running = CollectorConfig(data_dir=tmp_path)
    answers: list[CollectorConfig | ConfigError] = [
        ConfigError("collector.yaml is a FIFO (named pipe), not a regular file"), running]

    def reread() -> CollectorConfig:
        answer = answers.pop(0)
        if isinstance(answer, ConfigError):
            raise answer
        return answer

    woken = threading.Event()
    reloader = ConfigReloader(layout, reread, lambda config: Plan.__new__(Plan), wake=woken.set)
    reloader.request()
    assert poll_until(reloader, running) is None
    assert woken.is_set()
    result = read_result(layout)
    assert result is not None and (result.ok, result.message) == (
        False, "reload refused: collector.yaml is a FIFO (named pipe), not a regular file; the "
               "running config stays")
    reloader.request()
    assert poll_until(reloader, running) is None
    result = read_result(layout)
    assert result is not None and (result.ok, result.message) == (
        True, "reload: the config is unchanged")
