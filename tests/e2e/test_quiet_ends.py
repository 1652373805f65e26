"""The ways a command ends early, each at most one line and no traceback, with its documented
exit status: a closed pipe (141), a Ctrl-C at any moment of ``scrapy crawl``'s start (130) and
as its round ends (130, or 0 once it has exited), a second Ctrl-C on the runner (130), ``view``
on a port in use (2)."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from typing import Any

import pytest

from tests.support.collector import REPO_ROOT, RUNNER, SCRAPY, Collector, wait_for


def as_terminal_child() -> None:
    """A terminal's foreground command: SIGINT as Python's default (a background job, which a
    test process may be, inherits it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_closed_pipe_ends_any_runner_command_quietly(collector: Collector) -> None:
    collector.configure(docs_urls=["http://127.0.0.1:9/"])
    for command in (["catalog"], ["status"], ["--help"]):
        # `| head` that has read enough: here a reader that closed before the first line.
        reader_gone = subprocess.run(f"{' '.join(RUNNER)} {' '.join(command)} | true",
                                     shell=True, cwd=collector.home, env=collector.env(),
                                     capture_output=True, text=True, timeout=120,
                                     executable="/bin/bash")
        assert reader_gone.stderr == "", (command, reader_gone.stderr)
    statuses = subprocess.run(f"{' '.join(RUNNER)} catalog | true; echo ${{PIPESTATUS[0]}}",
                              shell=True, cwd=collector.home, env=collector.env(),
                              capture_output=True, text=True, timeout=120, executable="/bin/bash")
    assert (statuses.stdout, statuses.stderr) == ("141\n", "")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fake_docs", [{"latency_ms": 200, "pages": 400}], indirect=True)
def test_a_ctrl_c_at_any_moment_of_a_crawls_start_is_one_line_and_130(
        collector: Collector, fake_docs: Any) -> None:
    collector.configure(docs_urls=[f"{fake_docs.url()}/site0/"])
    log = collector.data_dir / "logs" / "docs-0of1.log"
    ends = []
    # From the moment the command is the project's (it has opened its log; before that Python
    # is importing Scrapy itself), through the components' start, to a crawl under way. Each
    # from an empty data dir: what an earlier one collected would make the next one shorter,
    # and 4 s could be past its end.
    for delay in (0.0, 0.1, 0.25, 0.5, 0.8, 1.2, 2.0, 4.0):
        shutil.rmtree(collector.data_dir, ignore_errors=True)
        crawl = subprocess.Popen([*SCRAPY, "crawl", "docs"], cwd=REPO_ROOT, env=collector.env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 preexec_fn=as_terminal_child)
        try:
            wait_for(log.exists, 60, "the crawl to open its log")
            time.sleep(delay)
            crawl.send_signal(signal.SIGINT)
            _out, err = crawl.communicate(timeout=60)
        finally:
            if crawl.poll() is None:
                crawl.kill()
                crawl.wait()
        assert "Traceback" not in err and len(err.splitlines()) <= 1, (delay, err)
        assert crawl.returncode == 130, (delay, crawl.returncode, err)
        ends.append(err.strip().split(":")[0] if err.startswith("scrapy") else "summary")
    # Both kinds were met: the start's own line, and the graceful end of a round under way
    # (its summary line, "ended: shutdown").
    assert {"scrapy crawl", "summary"} <= set(ends), ends


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fake_docs", [{"pages": 3}], indirect=True)
def test_a_ctrl_c_as_a_crawl_ends_is_130_or_nothing_never_death_by_sigint(
        collector: Collector, fake_docs: Any) -> None:
    # After its summary line the process tears down; Python gives SIGINT back to the system's
    # default as it finalizes (a few hundred ms), and a Ctrl-C then killed it by SIGINT.
    collector.configure(docs_urls=[f"{fake_docs.url()}/site0/"])
    for delay in (0.005, 0.02, 0.05, 0.1, 0.2):
        shutil.rmtree(collector.data_dir, ignore_errors=True)
        crawl = subprocess.Popen([*SCRAPY, "crawl", "docs"], cwd=REPO_ROOT, env=collector.env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 preexec_fn=as_terminal_child)
        try:
            assert crawl.stderr is not None
            summary = crawl.stderr.readline()  # the round's one line: it has ended
            time.sleep(delay)
            if crawl.poll() is None:
                crawl.send_signal(signal.SIGINT)
            rest = crawl.stderr.read()
            crawl.wait(timeout=60)
        finally:
            if crawl.poll() is None:
                crawl.kill()
                crawl.wait()
        assert summary.startswith("docs 0/1: "), (delay, summary, rest)
        assert (crawl.returncode in (0, 130), rest) == (True, ""), (delay, crawl.returncode)


@pytest.mark.timeout(180)
def test_a_second_ctrl_c_on_the_runner_kills_its_workers_with_one_line_and_130(
        collector: Collector, fake_hostile: Any) -> None:
    # A page that never finishes: the graceful stop cannot end the round before stop_timeout.
    collector.configure(docs_urls=[f"{fake_hostile.url()}/site/hang.html"], stop_timeout=60)
    runner = subprocess.Popen([*RUNNER, "--workers", "1", "--spiders", "docs"], cwd=collector.home,
                              env=collector.env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, preexec_fn=as_terminal_child)
    runner_log = collector.data_dir / "logs" / "runner.log"
    try:
        wait_for(lambda: fake_hostile.stats()["counts"].get("/site/hang.html"), 90,
                 "the worker to be hanging on its page")
        runner.send_signal(signal.SIGINT)
        wait_for(lambda: "stopping: SIGTERM to 1 workers" in runner_log.read_text(), 30,
                 "the graceful stop")
        runner.send_signal(signal.SIGINT)
        _out, err = runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert (runner.returncode, err) == (130, "python -m runner: interrupted again: killing 1 "
                                             "worker\n")
    assert "second Ctrl-C: SIGKILL to 1 workers still running" in runner_log.read_text()


def test_view_on_a_port_in_use_is_one_line_and_exit_2(collector: Collector) -> None:
    collector.configure(docs_urls=["http://127.0.0.1:9/"])
    assert collector.runner("catalog").returncode == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        view = collector.runner("view", "--port", str(port))
    assert (view.returncode, view.stdout) == (2, "")
    assert view.stderr == (f"python -m runner view: 127.0.0.1:{port} is in use (another view?); "
                           "choose another with --port N\n")
