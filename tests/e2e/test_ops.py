"""Operations end to end: the watchdog, the size monitor, webhooks, install-cron, the scripts.

Real runners against the fake docs server. A runner the watchdog restarts is detached (its own
session, reparented to init), so every test that starts one cleans up by pid at the end.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from runner.core.pidfile import running_pid
from runner.ops.restart import stop_runner
from scraper.utils.layout import DataLayout
from tests.support.collector import REPO_ROOT, RUNNER, Collector, wait_for
from tests.support.ops import PROXY_VARS, Ops, Webhook

MB = 1024 * 1024
SCRIPTS = REPO_ROOT / "scripts"


@pytest.fixture
def ops(tmp_path: Path, fake_docs_factory: Any) -> Iterator[Ops]:
    # Enough pages at enough latency that a first round lasts a few seconds.
    docs = fake_docs_factory(sites=2, pages=40, latency_ms=100)
    collector = Collector(tmp_path / "c")
    collector.configure(docs_urls=[f"{docs.url()}/site{k}/" for k in range(2)], stop_timeout=3,
                        spiders={"docs": {"settings": {"CONCURRENT_REQUESTS": 2}}})
    ops = Ops(collector)
    try:
        yield ops
    finally:
        ops.cleanup()


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    try:
        yield hook
    finally:
        hook.close()


def configure_webhook(ops: Ops, url: str) -> None:
    """Add ``notify.webhook_url`` to the collector's existing config."""
    import yaml

    path = ops.collector.config_path
    config = yaml.safe_load(path.read_text())
    config["notify"] = {"webhook_url": url}
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def closed_port_url() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


# --- the watchdog -------------------------------------------------------------------------------


@pytest.mark.timeout(90)
def test_watchdog_silent_when_healthy_restarts_a_killed_runner_and_notifies(
        ops: Ops, webhook: Webhook) -> None:
    configure_webhook(ops, webhook.url)
    first = ops.start_runner(workers=2)
    healthy = ops.run("watchdog")
    assert (healthy.returncode, healthy.stdout, healthy.stderr) == (0, "", "")

    workers = [w["pid"] for w in ops.status()["workers"] if w["pid"]]
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    wait_for(lambda: not any(psutil.pid_exists(p) for p in workers), 10, "workers to die with it")
    # An edit the dead run never reloaded: a restart is a new run, which starts from the file
    # the user edited, and the record its exec'd processes read says so.
    ops.collector.update_config({"health": {"failed_rounds": 7}})
    assert json.loads(ops.layout.resolved_config.read_text())["health"]["failed_rounds"] == 3

    result = ops.run("watchdog")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "collector down: 0/2 workers (runner gone); restarting",
        "collector restarted: 2 workers",
    ]
    assert json.loads(ops.layout.resolved_config.read_text())["health"]["failed_rounds"] == 7
    assert result.stderr == ""
    assert webhook.texts() == result.stdout.splitlines()

    new = ops.runner_pid()
    assert new and new != first.pid
    assert os.getsid(new) == new  # detached: its own session, no terminal, survives cron
    status = ops.status()
    assert status["runner"]["pid"] == new
    assert status["runner"]["command"][1:] == ["-m", "runner", "--workers", "2", "--spiders",
                                               "docs"]
    log = ops.layout.runner_log.read_text()
    assert "[runner.watchdog] WARNING: collector down: 0/2 workers (runner gone)" in log
    assert "secret-token" not in log

    again = ops.run("watchdog")
    assert (again.returncode, again.stdout) == (0, "")


def hold_lock(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


@pytest.mark.timeout(90)
def test_watchdog_restarts_a_runner_missing_workers(ops: Ops) -> None:
    # Hold one spider-shard's lock: its worker exits at once, every time, and the runner's
    # backoff keeps the slot "restarting" (then "failed") while the other one works.
    lock = hold_lock(ops.layout.state_dir / "locks" / "docs-1of2.lock")
    try:
        proc = ops.collector.start_runner("--workers", "2", "--spiders", "docs", env=ops.env())
        ops.started.append(proc)
        ops.pids.add(proc.pid)

        def slot_down_for_a_while() -> bool:
            try:
                slot = {w["slug"]: w for w in ops.status()["workers"]}["docs-1of2"]
            except (OSError, ValueError, KeyError):
                return False
            # Given up on: both of the watchdog's looks find it down. A slot still restarting
            # runs its next attempt (state "running") within 8 s, which a watchdog slow to
            # start on a loaded machine can see as a slot that is up.
            return slot["state"] == "failed"
        wait_for(slot_down_for_a_while, 40, "a slot kept down by its lock")

        watchdog = subprocess.Popen([*RUNNER, "watchdog"], cwd=ops.collector.home, env=ops.env(),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first_line = watchdog.stdout.readline() if watchdog.stdout else ""
    finally:
        os.close(lock)  # the restarted runner gets both slots
    out, err = watchdog.communicate(timeout=60)
    assert watchdog.returncode == 0, err
    assert first_line == f"collector down: 1/2 workers (runner pid {proc.pid} alive); restarting\n"
    assert out == "collector restarted: 2 workers\n"
    proc.wait(timeout=10)  # the degraded runner was stopped: SIGTERM, and it exited
    assert ops.runner_pid() not in (None, proc.pid)
    ops.remember_runner()


@pytest.mark.timeout(90)
def test_watchdog_stops_and_restarts_a_hung_runner(ops: Ops) -> None:
    # what only the old runner's environment has (a token, say): its successor must get it too
    first = ops.start_runner(workers=2, HUBCOLLECT_TEST_SECRET="from-the-old-runner")
    first.send_signal(signal.SIGSTOP)  # hung: alive, holding its pidfile, writing nothing
    wait_for(lambda: psutil.Process(first.pid).status() == psutil.STATUS_STOPPED, 5, "SIGSTOP")
    status = ops.status()
    # its age is judged on the monotonic clock the runner records beside the wall clock
    status["runner"]["updated_at"] = time.time() - 725
    status["runner"]["updated_monotonic"] = time.monotonic() - 725
    ops.layout.status_file.write_text(json.dumps(status))
    # hung in its size sample: the lock it holds must not hang the watchdog behind it (the
    # runner may have stopped holding it already)
    (ops.layout.state_dir / "sizes").mkdir(parents=True, exist_ok=True)
    sizes_lock = os.open(ops.layout.state_dir / "sizes" / "docs.lock", os.O_RDWR | os.O_CREAT)
    try:
        with contextlib.suppress(BlockingIOError):
            fcntl.flock(sizes_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = ops.run("watchdog")
    finally:
        os.close(sizes_lock)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout
    assert re.fullmatch(r"collector down: [0-2]/2 workers \(status stale 12m\); restarting",
                        lines[0])
    assert lines[1] == "collector restarted: 2 workers"
    first.wait(timeout=5)  # the old runner is gone, not merely replaced in the pidfile
    new = ops.runner_pid()
    assert new not in (None, first.pid)
    assert psutil.Process(new).environ()["HUBCOLLECT_TEST_SECRET"] == "from-the-old-runner"


@pytest.mark.timeout(30)
def test_stop_runner_sigkills_a_runner_that_ignores_sigterm(tmp_path: Path) -> None:
    layout = DataLayout(tmp_path / "data")
    code = ("import fcntl, os, signal, sys, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "os.write(fd, str(os.getpid()).encode())\n"
            "print('locked', flush=True)\n"
            "time.sleep(60)\n")
    layout.state_dir.mkdir(parents=True)
    stubborn = subprocess.Popen([sys.executable, "-c", code, str(layout.runner_pidfile)],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert stubborn.stdout and stubborn.stdout.readline() == "locked\n"
        started = time.monotonic()
        stop_runner(stubborn.pid, layout, stop_timeout=0)
        assert stubborn.wait(timeout=5) == -signal.SIGKILL
        assert 4.5 < time.monotonic() - started < 9
        assert "SIGKILL" in layout.runner_log.read_text()
    finally:
        if stubborn.poll() is None:
            stubborn.kill()
        stubborn.communicate()


@pytest.mark.parametrize("command", [
    ["/bin/sh", "-c", "touch {pwned}"],
    [sys.executable, "-c", "open({pwned!r}, 'w')"],
    [sys.executable, "-m", "runner", "--workers", "1", "--spiders", "docs", "--evil={pwned}"],
    [sys.executable, "-m", "runner", "watchdog"],
], ids=["shell", "python-c", "unknown-option", "not-a-run"])
def test_watchdog_starts_nothing_but_a_runner_run(collector: Collector, command: list[str]
                                                  ) -> None:
    collector.configure()
    pwned = collector.home / "pwned"
    layout = DataLayout(collector.data_dir)
    layout.state_dir.mkdir(parents=True)
    layout.status_file.write_text(json.dumps({"runner": {
        "pid": 4242, "command": [arg.format(pwned=str(pwned)) for arg in command],
        "cwd": str(collector.home), "planned": 1, "updated_at": time.time()}, "workers": []}))
    result = collector.runner("watchdog")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "collector down: 0/1 workers (runner gone); restarting"
    assert lines[1].startswith("collector restart failed: the recorded command line")
    assert lines[1].endswith("not starting it") and len(lines) == 2
    time.sleep(0.5)
    assert not pwned.exists()


def test_watchdog_hands_a_runner_no_setting_outside_the_allow_list(collector: Collector
                                                                   ) -> None:
    """JOBDIR (Scrapy unpickles the requests it keeps there) in the config the recorded command
    names: refused, nothing started."""
    jobs = collector.home / "jobs"
    collector.configure(spiders={"docs": {"start_urls": ["http://127.0.0.2:9/"],
                                          "settings": {"JOBDIR": str(jobs)}}})
    layout = DataLayout(collector.data_dir)
    layout.state_dir.mkdir(parents=True)
    layout.status_file.write_text(json.dumps({"runner": {
        "pid": 4242, "command": [sys.executable, "-m", "runner", "--workers", "1", "--spiders",
                                 "docs", "--once", "--config", str(collector.config_path)],
        "cwd": str(collector.home), "planned": 1, "updated_at": time.time()}, "workers": []}))
    result = collector.runner("watchdog")
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        "collector down: 0/1 workers (runner gone); restarting",
        f"collector restart failed: {collector.config_path}: spiders.docs.settings.JOBDIR is not "
        "a setting the watchdog starts a runner with (numbers and switches only): not starting "
        "it"]
    time.sleep(1.0)
    assert running_pid(layout.runner_pidfile) is None and not jobs.exists()


@pytest.mark.timeout(90)
def test_watchdog_restarts_a_dead_runner_whose_status_is_empty(ops: Ops) -> None:
    first = ops.start_runner(workers=2)
    workers = [w["pid"] for w in ops.status()["workers"] if w["pid"]]
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    wait_for(lambda: not any(psutil.pid_exists(p) for p in workers), 10, "workers to die with it")
    ops.layout.status_file.write_text("")  # as a crash between create and write would leave it

    result = ops.run("watchdog")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "collector restarted: 2 workers"
    assert ops.runner_pid() not in (None, first.pid)


def test_watchdog_without_any_runner_says_so_once(collector: Collector) -> None:
    collector.configure()
    result = collector.runner("watchdog")
    assert result.returncode == 1
    assert len(result.stdout.splitlines()) == 1
    assert "no runner has ever run" in result.stdout
    assert result.stderr == ""
    bad = collector.runner("watchdog", "--min-workers", "0")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1 and bad.stdout == ""


# --- the size monitor, housekeeping, notifications ---------------------------------------------


def grow(data_dir: Path, name: str, size: int) -> None:
    (data_dir / "items").mkdir(parents=True, exist_ok=True)
    # random bytes: a compressing or deduplicating filesystem must not hide them
    (data_dir / "items" / name).write_bytes(os.urandom(size))


def test_size_monitor_speaks_once_per_milestone(collector: Collector, webhook: Webhook) -> None:
    collector.configure(notify={"webhook_url": webhook.url})
    env = collector.env()
    for name in PROXY_VARS:
        env.pop(name, None)

    def size(*extra: str) -> str:
        result = collector.runner("size", "--every", "1MB", *extra, env=env)
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
        return result.stdout

    grow(collector.data_dir, "a", MB // 2)
    assert size() == ""  # first run, below one step: nothing to say
    grow(collector.data_dir, "b", MB)
    assert re.fullmatch(r"data: [12] MB \(\+1 MB\) of 10 MB\n", size("--target", "10MB"))
    assert size() == ""
    assert size() == ""
    grow(collector.data_dir, "c", MB // 4)
    assert size() == ""  # still between 1 and 2 MB
    grow(collector.data_dir, "d", 2 * MB)
    third = size()
    assert re.fullmatch(r"data: [34] MB \(\+2 MB\)\n", third)
    assert size() == ""
    assert (collector.data_dir / "state" / "size_mark").read_text().strip() == str(3 * MB)

    # a dip below the mark (a checkpoint, a rotation) does not re-announce the milestone
    (collector.data_dir / "items" / "c").unlink()
    assert size() == ""
    grow(collector.data_dir, "c", MB // 4)
    assert size() == ""
    assert len(webhook.texts()) == 2 and webhook.texts()[1] == third.strip()


def test_size_monitor_removes_only_old_rotated_logs(collector: Collector) -> None:
    collector.configure(logs_keep_days=3)
    logs = collector.data_dir / "logs"
    logs.mkdir(parents=True)
    old = time.time() - 4 * 86400
    names = ["docs-0of2.log", "docs-0of2.log.1", "docs-0of2.log.2", "runner.log.1",
             "runner.log", "notes.log.txt"]
    for name in names:
        (logs / name).write_text("x\n")
    for name in ["docs-0of2.log", "docs-0of2.log.2", "runner.log.1", "notes.log.txt"]:
        os.utime(logs / name, (old, old))
    result = collector.runner("size", "--every", "100MB")
    assert (result.returncode, result.stdout) == (0, "")
    assert sorted(p.name for p in logs.iterdir()) == [
        "docs-0of2.log", "docs-0of2.log.1", "notes.log.txt", "runner.log"]


def test_a_dead_webhook_changes_nothing_but_the_log(collector: Collector) -> None:
    collector.configure(notify={"webhook_url": closed_port_url()})
    grow(collector.data_dir, "a", 2 * MB)
    started = time.monotonic()
    result = collector.runner("size", "--every", "1MB")
    assert time.monotonic() - started < 10
    assert result.returncode == 0
    assert re.fullmatch(r"data: \d MB \(\+2 MB\)\n", result.stdout)
    assert result.stderr == ""
    log = (collector.data_dir / "logs" / "runner.log").read_text()
    assert "[runner.notify] WARNING: webhook POST to http://127.0.0.1:" in log


def test_webhook_refuses_another_origin_and_never_logs_userinfo(collector: Collector,
                                                                webhook: Webhook) -> None:
    # `webhook` is another origin (another port): the 302 must not be followed there.
    redirector = Webhook(redirect_to=f"{webhook.url}?stolen=1")
    try:
        port = redirector.server.server_address[1]
        collector.configure(notify={
            "webhook_url": f"http://hook:hunter2@127.0.0.1:{port}/hooks/secret-token"})
        grow(collector.data_dir, "a", 2 * MB)
        env = collector.env()
        for name in PROXY_VARS:
            env.pop(name, None)
        result = collector.runner("size", "--every", "1MB", env=env)
    finally:
        redirector.close()
    assert result.returncode == 0 and result.stderr == ""
    # The userinfo was sent as Basic auth to the webhook's own origin, and went nowhere else.
    assert redirector.requests == [("POST", "/hooks/secret-token", "Basic aG9vazpodW50ZXIy")]
    assert webhook.requests == []
    log = (collector.data_dir / "logs" / "runner.log").read_text()
    assert f"webhook POST to http://127.0.0.1:{port} failed: " in log, log
    assert "redirect to another origin" in log
    assert "hunter2" not in log + result.stdout and "hook:" not in log
    assert "secret-token" not in log


@pytest.mark.parametrize("args", [
    ["size", "--every", "10XB"],
    ["size", "--every", "0"],
    ["size", "--every", "1MB", "--target", "lots"],
    ["size"],
    ["install-cron", "--every", "1.5.G"],
])
def test_bad_sizes_are_one_line_and_exit_2(collector: Collector, args: list[str]) -> None:
    collector.configure()
    result = collector.runner(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("python -m runner: ")


# --- install-cron and the scripts ---------------------------------------------------------------


def test_install_cron_is_idempotent_and_keeps_other_lines(collector: Collector) -> None:
    config = collector.configure()
    crontab = collector.home / "crontab"
    mine = "MAILTO=me@example.org\n0 3 * * * /usr/local/bin/backup --all\n"
    crontab.write_text(mine)

    first = collector.runner("install-cron", "--crontab-file", str(crontab), "--min-workers", "3")
    assert first.returncode == 0, first.stderr
    assert len(first.stdout.splitlines()) == 1
    text = crontab.read_text()
    assert text.startswith(mine)
    block = text[len(mine):].splitlines()
    assert block[1] == "# >>> hubcollect >>>" and block[-1] == "# <<< hubcollect <<<"
    jobs = [line for line in block if not line.startswith("#") and line]
    prefix = (f"*/5 * * * * cd {collector.home} && COLLECTOR_PYTHON={sys.executable} "
              f"COLLECTOR_CONFIG={config}")
    assert jobs == [f"{prefix} {SCRIPTS}/watchdog.sh --min-workers 3",
                    f"{prefix} {SCRIPTS}/size_monitor.sh --every 100MB"]

    again = collector.runner("install-cron", "--crontab-file", str(crontab), "--min-workers", "3")
    assert again.returncode == 0 and "unchanged" in again.stdout
    assert crontab.read_text() == text

    changed = collector.runner("install-cron", "--crontab-file", str(crontab), "--every", "1G",
                               "--target", "20G")
    assert changed.returncode == 0, changed.stderr
    updated = crontab.read_text()
    assert updated.count("# >>> hubcollect >>>") == 1 and updated.startswith(mine)
    assert f"{prefix} {SCRIPTS}/watchdog.sh\n" in updated
    assert f"{prefix} {SCRIPTS}/size_monitor.sh --every 1G --target 20G\n" in updated

    dry = collector.runner("install-cron", "--crontab-file", str(crontab), "--dry-run",
                           "--user", "collector")
    assert dry.returncode == 0
    assert crontab.read_text() == updated  # nothing written
    assert dry.stdout.startswith(mine)
    assert f"*/5 * * * * collector cd {collector.home}" in dry.stdout

    damaged = collector.home / "damaged"
    damaged.write_text("# >>> hubcollect >>>\n* * * * * true\n")
    bad = collector.runner("install-cron", "--crontab-file", str(damaged))
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1


EVIL = "x\n* * * * * touch pwned #"
"""A name that, written into a crontab as it is, adds a cron job of its own."""


@pytest.mark.parametrize("where", ["directory", "config", "user"])
def test_install_cron_refuses_control_characters(collector: Collector, where: str) -> None:
    config = collector.configure()
    evil = collector.home / EVIL
    evil.mkdir()
    cwd, env, extra = collector.home, collector.env(), []
    if where == "directory":
        cwd = evil
    elif where == "config":
        env["COLLECTOR_CONFIG"] = str(evil / "collector.yaml")
        (evil / "collector.yaml").write_text(config.read_text())
    else:
        extra = ["--user", EVIL]
    crontab = collector.home / "crontab"
    crontab.write_text("MAILTO=me@example.org\n")
    done = subprocess.run([*RUNNER, "install-cron", "--crontab-file", str(crontab), *extra],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "control character '\\n'" in done.stderr
    assert crontab.read_text() == "MAILTO=me@example.org\n"


def test_the_cron_line_runs_with_crons_bare_environment(collector: Collector) -> None:
    collector.configure()
    grow(collector.data_dir, "a", 2 * MB)
    crontab = collector.home / "crontab"
    assert collector.runner("install-cron", "--crontab-file", str(crontab),
                            "--every", "1MB").returncode == 0
    line = next(line for line in crontab.read_text().splitlines() if "size_monitor.sh" in line)
    command = line.split(" ", 5)[5]
    # what cron gives a job: /bin/sh, $HOME as the directory, PATH=/usr/bin:/bin, little else
    bare = {"PATH": "/usr/bin:/bin", "HOME": str(collector.home.parent), "SHELL": "/bin/sh"}
    done = subprocess.run(["/bin/sh", "-c", command], cwd=collector.home.parent, env=bare,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"data: \d MB \(\+2 MB\)\n", done.stdout)
    assert done.stderr == ""


def test_scripts_pass_args_and_status_here_and_over_ssh(collector: Collector,
                                                         tmp_path: Path) -> None:
    collector.configure()
    grow(collector.data_dir, "a", 2 * MB)
    env = collector.env(COLLECTOR_PYTHON=sys.executable)
    script = str(SCRIPTS / "size_monitor.sh")
    bad = subprocess.run([script, "--every", "nope"], env=env, capture_output=True, text=True,
                         cwd=collector.home, timeout=60)
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.splitlines()) == 1

    # A fake ssh: records its arguments, then runs the remote command as sshd would.
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    calls = tmp_path / "ssh-calls"
    (fake_bin / "ssh").write_text(
        "#!/usr/bin/env bash\n"
        f"printf '%s\\n' \"$@\" > {calls}\n"
        'for last; do :; done\n'
        'cd "$HOME" && exec bash -c "$last"\n')
    (fake_bin / "ssh").chmod(0o755)
    remote_env = {**env, "HOST": "box", "PATH": f"{fake_bin}:{env['PATH']}",
                  "HOME": str(tmp_path)}
    done = subprocess.run([script, "--every", "1MB"], env=remote_env, capture_output=True,
                          text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"data: \d MB \(\+2 MB\)\n", done.stdout)
    args = calls.read_text().splitlines()
    assert args[:5] == ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "box"]
    assert args[5].startswith(f"cd {REPO_ROOT} && COLLECTOR_PYTHON=")

    again = subprocess.run([script, "--every", "1MB"], env=remote_env, capture_output=True,
                           text=True, cwd=tmp_path, timeout=60)
    assert (again.returncode, again.stdout) == (0, "")


def test_size_monitor_keeps_logs_by_the_runs_logs_keep_days(tmp_path: Path) -> None:
    """The cron job's housekeeping follows the resolved record the runner wrote: an edit of
    logs_keep_days that was never reloaded waits for the run that reads it."""
    import argparse

    from runner.core.resolved import write_resolved
    from runner.ops.size import cmd_size
    from scraper.config.collector import load_config

    path = tmp_path / "collector.yaml"
    path.write_text(f"data_dir: {tmp_path / 'data'}\nlogs_keep_days: 10\n")
    layout = DataLayout(tmp_path / "data")
    write_resolved(layout, load_config(path, environ={}))
    path.write_text(f"data_dir: {tmp_path / 'data'}\nlogs_keep_days: 3\n")
    layout.logs_dir.mkdir(parents=True)
    rotated = layout.logs_dir / "runner.log.1"
    rotated.write_text("x\n")
    old = time.time() - 4 * 86400
    os.utime(rotated, (old, old))
    args = argparse.Namespace(every=100 * MB, target=None)

    assert cmd_size(args, load_config(path, environ={})) == 0
    assert rotated.exists()  # 4 days old, within the run's 10
    layout.resolved_config.unlink()  # no run recorded: the file's 3 days
    assert cmd_size(args, load_config(path, environ={})) == 0
    assert not rotated.exists()
