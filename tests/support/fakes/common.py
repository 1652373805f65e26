"""Plumbing shared by the fake servers.

Both fakes are separate processes (so a crawler under test talks real HTTP over loopback) and
need the same things: a port file written once they listen, per-request recording for
``/_stats``, a ``/_control`` endpoint, artificial latency and a clean exit on SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from aiohttp import web

# Test plumbing must not disturb what it measures: these are never recorded, delayed or limited.
UNRECORDED_PATHS = frozenset({"/_stats", "/_control"})

ControlHandler = Callable[[Any], None]


class ControlError(ValueError):
    """A ``/_control`` payload the server cannot apply (answered with 400)."""


def write_port_file(path: Path | str, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON so that a polling reader never sees a half-written file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port-file", required=True, type=Path)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--jitter", type=float, default=0.0)


def accepts_gzip(request: web.Request) -> bool:
    return "gzip" in request.headers.get("Accept-Encoding", "").lower()


class Payload:
    """A pre-rendered body; its gzip form is computed on first demand and then reused."""

    __slots__ = ("_gzipped", "body", "compressible", "content_type")

    def __init__(self, body: bytes, content_type: str, *, compressible: bool = True) -> None:
        self.body = body
        self.content_type = content_type
        self.compressible = compressible
        self._gzipped: bytes | None = None

    def response(
        self, request: web.Request, status: int = 200, headers: dict[str, str] | None = None
    ) -> web.Response:
        out = {"Content-Type": self.content_type}
        if headers:
            out.update(headers)
        body = self.body
        if self.compressible:
            out["Vary"] = "Accept-Encoding"
            if accepts_gzip(request):
                if self._gzipped is None:
                    # mtime=0 keeps the compressed bytes identical across processes and runs.
                    self._gzipped = gzip.compress(self.body, compresslevel=6, mtime=0)
                body = self._gzipped
                out["Content-Encoding"] = "gzip"
        return web.Response(status=status, body=body, headers=out)


class Latency:
    def __init__(self, ms: float = 0.0, jitter: float = 0.0) -> None:
        self.ms = ms
        self.jitter = jitter
        # Seeded so a slow run can be replayed with the same delays.
        self._rng = random.Random(0)

    def set_ms(self, value: Any) -> None:
        ms = float(value)
        if ms < 0:
            raise ControlError("latency_ms must be >= 0")
        self.ms = ms

    def set_jitter(self, value: Any) -> None:
        jitter = float(value)
        if not 0.0 <= jitter <= 1.0:
            raise ControlError("jitter must be within [0, 1]")
        self.jitter = jitter

    async def sleep(self) -> None:
        if self.ms <= 0:
            return
        factor = self._rng.uniform(1.0 - self.jitter, 1.0 + self.jitter)
        await asyncio.sleep(self.ms * factor / 1000.0)


class Recorder:
    """What ``/_stats`` reports: every recorded request plus aggregate counters."""

    def __init__(self) -> None:
        self.inflight: Counter[str] = Counter()
        self.reset()

    def reset(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.counts: Counter[str] = Counter()
        self.status_counts: Counter[str] = Counter()
        self.counters: Counter[str] = Counter()
        # Start from what is in flight now, so a reset under load does not under-report.
        total = sum(self.inflight.values())
        self.max_concurrency = total
        self.max_concurrency_by_app: Counter[str] = Counter(self.inflight)

    def enter(self, app: str) -> None:
        self.inflight[app] += 1
        total = sum(self.inflight.values())
        self.max_concurrency = max(self.max_concurrency, total)
        if self.inflight[app] > self.max_concurrency_by_app[app]:
            self.max_concurrency_by_app[app] = self.inflight[app]

    def leave(self, app: str) -> None:
        self.inflight[app] -= 1

    def bump(self, name: str, amount: int = 1) -> None:
        self.counters[name] += amount

    def record(self, entry: dict[str, Any]) -> None:
        self.requests.append(entry)
        query = entry["query"]
        self.counts[entry["path"] + ("?" + query if query else "")] += 1
        self.status_counts[str(entry["status"])] += 1
        if entry["auth"]:
            self.counters["auth"] += 1
            self.counters["auth:" + entry["app"]] += 1

    def snapshot(self) -> dict[str, Any]:
        return {
            "requests": list(self.requests),
            "counts": dict(self.counts),
            "status_counts": dict(self.status_counts),
            "total": len(self.requests),
            "max_concurrency": self.max_concurrency,
            "max_concurrency_by_app": dict(self.max_concurrency_by_app),
            "inflight": sum(self.inflight.values()),
        }


class FakeProcess:
    """State shared by all listeners of one fake server process.

    Subclasses register their own ``/_control`` keys with :meth:`add_control` and extend
    :meth:`config` and :meth:`stats`. Handlers can attach extra per-request fields for the
    stats log by setting ``request["record"]`` to a dict.
    """

    def __init__(self, latency_ms: float = 0.0, jitter: float = 0.0) -> None:
        self.latency = Latency()
        self.latency.set_ms(latency_ms)
        self.latency.set_jitter(jitter)
        self.recorder = Recorder()
        self._controls: dict[str, ControlHandler] = {}
        self.add_control("reset_stats", lambda v: self.recorder.reset() if v else None)
        self.add_control("latency_ms", self.latency.set_ms)
        self.add_control("jitter", self.latency.set_jitter)
        # Held, every recorded request waits until released: a test can start several crawls
        # and let them fetch only once each one is running, so they surely run at once.
        self.released = asyncio.Event()
        self.released.set()
        self.add_control("hold", self._hold)

    def _hold(self, value: Any) -> None:
        if not isinstance(value, bool):
            raise ControlError("hold must be true or false")
        if value:
            self.released.clear()
        else:
            self.released.set()

    def add_control(self, key: str, handler: ControlHandler) -> None:
        self._controls[key] = handler

    def apply_control(self, payload: Any) -> None:
        if not isinstance(payload, dict):
            raise ControlError("control payload must be a JSON object")
        # Reject typos up front instead of silently ignoring a setting a test relies on.
        unknown = sorted(set(payload) - set(self._controls))
        if unknown:
            raise ControlError(f"unknown control keys: {unknown}; known: {sorted(self._controls)}")
        for key, value in payload.items():
            self._controls[key](value)

    def config(self) -> dict[str, Any]:
        return {"latency_ms": self.latency.ms, "jitter": self.latency.jitter,
                "hold": not self.released.is_set()}

    def stats(self) -> dict[str, Any]:
        return self.recorder.snapshot()

    def bound(self, urls: dict[str, str]) -> None:
        """Called once the listeners have ports, before the port file is written."""

    def make_app(self, name: str) -> web.Application:
        app = web.Application(middlewares=[self._middleware(name)])
        app.router.add_get("/_stats", self._handle_stats)
        app.router.add_get("/_control", self._handle_control)
        app.router.add_post("/_control", self._handle_control)
        return app

    async def _handle_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def _handle_control(self, request: web.Request) -> web.Response:
        if request.method == "POST":
            raw = await request.read()
            try:
                payload = json.loads(raw) if raw.strip() else {}
            except ValueError as exc:
                return web.json_response({"error": f"invalid JSON: {exc}"}, status=400)
            try:
                self.apply_control(payload)
            except (ControlError, TypeError, ValueError, KeyError) as exc:
                return web.json_response({"error": str(exc)}, status=400)
        return web.json_response(self.config())

    def _middleware(self, app_name: str) -> Any:
        recorder = self.recorder
        latency = self.latency
        released = self.released

        @web.middleware
        async def middleware(request: web.Request, handler: Any) -> web.StreamResponse:
            if request.path in UNRECORDED_PATHS:
                return await handler(request)
            await released.wait()
            started = time.time()
            status = 500
            recorder.enter(app_name)
            try:
                try:
                    response = await handler(request)
                except web.HTTPException as exc:
                    status = exc.status
                    raise
                status = response.status
                await latency.sleep()
                return response
            finally:
                recorder.leave(app_name)
                entry = {
                    "t": started,
                    "app": app_name,
                    "method": request.method,
                    "path": request.path,
                    "query": request.rel_url.raw_query_string,
                    "status": status,
                    "auth": "Authorization" in request.headers,
                    "identity": None,
                    "resource": None,
                }
                extra = request.get("record")
                if extra:
                    entry.update(extra)
                recorder.record(entry)

        return middleware


async def serve(
    process: FakeProcess,
    listeners: Iterable[tuple[str, web.Application, str]],
    port_file: Path,
) -> None:
    """Bind every ``(name, app, host)`` on port 0, publish the URLs and run until SIGTERM."""
    runners: list[web.AppRunner] = []
    urls: dict[str, str] = {}
    for name, app, host in listeners:
        # A short shutdown timeout: tests stop servers with requests possibly still sleeping.
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, host, 0, backlog=1024, shutdown_timeout=1.0)
        await site.start()
        bound_host, port = runner.addresses[0][:2]
        urls[name] = f"http://{bound_host}:{port}"
        runners.append(runner)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    process.bound(urls)
    write_port_file(port_file, {**urls, "pid": os.getpid()})

    # If the test run that started us is killed, do not linger as an orphan holding a port.
    parent = os.getppid()
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), timeout=1.0)
        except TimeoutError:
            if os.getppid() != parent:
                break
    for runner in runners:
        await runner.cleanup()


def run(main: Callable[[], Any]) -> None:
    """Run an async ``main`` coroutine function as the process body."""
    asyncio.run(main())
