"""Start the fake servers as subprocesses and talk to their ``/_stats`` and ``/_control``.

Each server is a process of its own, forked from one server-less process per test process that
has imported the fakes and aiohttp once (multiprocessing's forkserver): a start costs a fork,
not an interpreter and its imports, which a suite starting a hundred servers paid again each
time. ``python -m tests.support.fakes.github …`` runs the same server by hand.
"""

from __future__ import annotations

import importlib
import json
import math
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]
STARTUP_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0

# The fakes live on loopback; an http_proxy in the environment must never intercept them.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


FAKE_MODULES = ("github", "docs", "hostile")
_FORKSERVER = multiprocessing.get_context("forkserver")
_FORKSERVER.set_forkserver_preload([f"tests.support.fakes.{module}" for module in FAKE_MODULES])


def _serve(module: str, argv: list[str], log: str) -> None:
    """The forked child: ``python -m tests.support.fakes.MODULE ARGV`` with stderr to ``log``."""
    with open(log, "ab", buffering=0) as stderr, open(os.devnull, "wb") as null:
        os.dup2(stderr.fileno(), 2)
        os.dup2(null.fileno(), 1)
    os.chdir(REPO_ROOT)
    fake = importlib.import_module(f"tests.support.fakes.{module}")
    sys.argv = [fake.__file__ or module, *argv]
    fake.main(argv)


class ForkedServer:
    """The few things of ``subprocess.Popen`` a :class:`FakeServer` uses, for a forked child."""

    def __init__(self, process: multiprocessing.process.BaseProcess) -> None:
        self._process = process

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def send_signal(self, sig: int) -> None:
        if self._process.pid is not None and self._process.exitcode is None:
            os.kill(self._process.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int | None:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(f"fake server {self.pid}", timeout or 0)
        return self._process.exitcode


class FakeServer:
    """A started fake server process.

    ``urls`` is the port-file JSON: ``{"web", "api", "pid"}`` for GitHub, ``{"url", "pid"}``
    for docs.
    """

    def __init__(self, name: str, process: ForkedServer, urls: dict, log: Path) -> None:
        self.name = name
        self.process = process
        self.urls = urls
        self.log = log

    def __repr__(self) -> str:
        return f"<FakeServer {self.name} pid={self.process.pid} {self.urls}>"

    def __enter__(self) -> FakeServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def returncode(self) -> int | None:
        return self.process.poll()

    def url(self, app: str | None = None) -> str:
        """Base URL of ``app`` ("web", "api"); the docs URL or the GitHub API by default."""
        if app is None:
            app = "url" if "url" in self.urls else "api"
        return self.urls[app]

    def _call(self, app: str | None, path: str, payload: dict | None = None) -> dict:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(self.url(app) + path, data=data)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with _OPENER.open(request, timeout=10) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            raise RuntimeError(f"{self.name} {path}: HTTP {exc.code}: {detail}") from exc

    def stats(self, app: str | None = None) -> dict:
        """``GET /_stats`` (both GitHub apps share one state, so ``app`` rarely matters)."""
        return self._call(app, "/_stats")

    def control(self, app: str | None = None, **changes: Any) -> dict:
        """``POST /_control`` with ``changes`` as the JSON object; returns the new config."""
        return self._call(app, "/_control", changes)

    def kill(self) -> None:
        """SIGKILL: a test's end, when nothing is listening to how the server goes."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        """SIGTERM, wait, SIGKILL if it does not go."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _argv(options: dict[str, Any]) -> list[str]:
    argv: list[str] = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    return argv


def _start(module: str, tmp_path: Path | str, options: dict[str, Any]) -> FakeServer:
    directory = Path(tmp_path)
    directory.mkdir(parents=True, exist_ok=True)
    # Unique names let one test start several servers in the same tmp_path.
    stem = f"fake-{module}-{uuid.uuid4().hex[:8]}"
    port_file = directory / f"{stem}.json"
    log = directory / f"{stem}.stderr"
    log.write_bytes(b"")
    argv = ["--port-file", str(port_file), *_argv(options)]
    # A daemon: one a test left running is ended as its test process exits, not waited for.
    child = _FORKSERVER.Process(target=_serve, args=(module, argv, str(log)), daemon=True,
                                name=f"fake-{module}")
    child.start()
    process = ForkedServer(child)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while True:
        if port_file.exists():
            return FakeServer(module, process, json.loads(port_file.read_text()), log)
        if process.poll() is not None:
            raise RuntimeError(
                f"fake {module} exited with {process.returncode}:\n{log.read_text()}"
            )
        if time.monotonic() > deadline:
            process.kill()
            process.wait()
            raise RuntimeError(
                f"fake {module} did not start within {STARTUP_TIMEOUT_S}s:\n{log.read_text()}"
            )
        time.sleep(0.02)


def fake_windows(requests: list[dict[str, Any]], window: float) -> list[tuple[float, float]]:
    """The windows the fake opened, rebuilt from its request log: one opens with the first
    counted request at or after the previous reset and resets ``window`` later, rounded up to
    a whole second (as ``x-ratelimit-reset`` is)."""
    windows: list[tuple[float, float]] = []
    reset = -math.inf
    for r in requests:
        if r["status"] == 200 and r["t"] >= reset:
            reset = math.ceil(r["t"] + window)
            windows.append((r["t"], reset))
    return windows


def start_fake_github(tmp_path: Path | str, **options: Any) -> FakeServer:
    """Options are the CLI flags with underscores: ``web_host``, ``api_host``,
    ``search_limit``, ``search_window``, ``core_limit``, ``core_window``, ``rate_status``,
    ``rate_limit_api`` (json, disabled, html), ``one_origin`` (the API serves trending too),
    ``latency_ms``, ``jitter``, ``trending_fixtures``.

    The API listens on 127.0.0.3 unless told otherwise, so that web and API are different
    hosts (separate Scrapy download slots, and a redirect between them crosses hosts).
    """
    options = {"web_host": "127.0.0.1", "api_host": "127.0.0.3", **options}
    return _start("github", tmp_path, options)


def start_fake_docs(tmp_path: Path | str, **options: Any) -> FakeServer:
    """Options: ``host`` (127.0.0.2), ``sites``, ``pages``, ``page_kb``, ``latency_ms``,
    ``jitter``, ``fixtures`` (a directory of real pages)."""
    return _start("docs", tmp_path, options)


def start_fake_hostile(tmp_path: Path | str, **options: Any) -> FakeServer:
    """Options: ``host`` (127.0.0.5), ``other_host`` (127.0.0.6, the off-host redirect's
    target), ``huge_mb`` (100). ``url()`` is the main listener, ``url("other")`` the other."""
    return _start("hostile", tmp_path, options)
