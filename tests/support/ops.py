"""The watchdog, size monitor and notifications as cron runs them: an ops harness, and a
webhook receiver on loopback."""

from __future__ import annotations

import http.server
import json
import signal
import subprocess
import threading
from typing import Any

import psutil

from runner.core.pidfile import running_pid
from scraper.utils.layout import DataLayout
from tests.support.collector import Collector, wait_for


class Ops:
    """A collector home plus the runner processes to clean up, however they were started."""

    def __init__(self, collector: Collector) -> None:
        self.collector = collector
        self.layout = DataLayout(collector.data_dir)
        self.pids: set[int] = set()
        self.started: list[subprocess.Popen[str]] = []

    def env(self) -> dict[str, str]:
        env = self.collector.env()
        for name in PROXY_VARS:  # the webhook server is on loopback
            env.pop(name, None)
        return env

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        done = self.collector.runner(*args, timeout=timeout, env=self.env())
        self.remember_runner()
        return done

    def start_runner(self, workers: int = 2, **env: str) -> subprocess.Popen[str]:
        proc = self.collector.start_runner("--workers", str(workers), "--spiders", "docs",
                                           env={**self.env(), **env})
        self.started.append(proc)
        self.pids.add(proc.pid)
        wait_for(lambda: self.running_workers() == workers, 30, f"{workers} running workers")
        return proc

    def launch(self, *args: str) -> subprocess.Popen[str]:
        """``python -m runner ARGS`` in the background, cleaned up with the rest."""
        proc = self.collector.start_runner(*args, env=self.env())
        self.started.append(proc)
        self.pids.add(proc.pid)
        return proc

    def runner_pid(self) -> int | None:
        return running_pid(self.layout.runner_pidfile)

    def remember_runner(self) -> None:
        pid = self.runner_pid()
        if pid:
            self.pids.add(pid)

    def status(self) -> dict[str, Any]:
        return json.loads(self.layout.status_file.read_text())

    def running_workers(self) -> int:
        try:
            status = self.status()
        except (OSError, ValueError):
            return 0
        if status["runner"]["pid"] != self.runner_pid():
            return 0
        return sum(1 for w in status["workers"]
                   if w["state"] == "running" and w["pid"] and psutil.pid_exists(w["pid"]))

    def cleanup(self) -> None:
        self.remember_runner()
        if self.runner_pid():
            self.collector.runner("stop", timeout=60, env=self.env())
        for pid in self.pids:
            try:
                process = psutil.Process(pid)
                if process.status() != psutil.STATUS_ZOMBIE:
                    process.send_signal(signal.SIGCONT)
                    process.kill()  # its workers follow (PR_SET_PDEATHSIG)
            except psutil.Error:
                pass
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


class Webhook:
    """A chat webhook on loopback: records each POSTed JSON body (and each request's method,
    path and Authorization in ``requests``); with ``redirect_to`` it answers 302 to that URL."""

    def __init__(self, redirect_to: str | None = None) -> None:
        self.received: list[Any] = []
        self.requests: list[tuple[str, str, str | None]] = []
        received, requests = self.received, self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                received.append(json.loads(self.rfile.read(length)))
                self.do_GET()

            def do_GET(self) -> None:
                requests.append((self.command, self.path, self.headers.get("Authorization")))
                self.send_response(302 if redirect_to else 204)
                if redirect_to:
                    self.send_header("Location", redirect_to)
                    self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/secret-token"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def texts(self) -> list[str]:
        return [body["text"] for body in self.received]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
