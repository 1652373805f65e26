"""What every benchmark shares: machine info, measured child processes, tree memory, tables.

A contender always runs as a child process of the benchmark. Its CPU time is the ``rusage`` that
``wait4`` returns when it is reaped: its own CPU plus that of every descendant it reaped (the
runner reaps its workers, the predecessor joins its ``multiprocessing`` workers), so it is the
CPU of the whole process tree. Its memory is the PSS summed over the child and all its
descendants (``psutil``'s ``memory_full_info``), sampled on a thread while it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
PYTHON = sys.executable
MB = 1024 * 1024

SERVER_NICE = -10
CONTENDER_NICE = 10
"""The local server stands in for a remote site, which a crawler's process count cannot starve;
but Linux shares CPU per process, so 20 busy workers at the server's priority would leave a
one-process server about 1/21 of the CPU, and every many-process contender would measure the
server's starvation. So the server runs at ``SERVER_NICE`` when the benchmark may raise a
priority (root), and the contenders at their normal priority; otherwise the contenders run at
``CONTENDER_NICE`` (which also puts them behind anything else running on the machine). Either
way the server gets the CPU it asks for (it uses little) and the contenders share the rest."""


def source_tree(rev: str, packages: Sequence[str], into: Path) -> Path:
    """``packages`` as git revision ``rev`` had them, extracted under ``into``; or, where
    ``rev`` is a directory (a copy of the project, as CI runs from, has no revisions), copied
    from it."""
    into.mkdir(parents=True, exist_ok=True)
    if Path(rev).is_dir():
        for name in packages:
            shutil.copytree(Path(rev) / name, into / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        return into
    archive = subprocess.run(["git", "archive", "--format=tar", rev, *packages], cwd=REPO_ROOT,
                             capture_output=True, check=True, timeout=120).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def child_json(module: str, tree: Path, args: Sequence[str]) -> dict[str, Any]:
    """What ``python -m module --child ARGS`` printed on its last line, as JSON, run with
    ``tree`` first on ``PYTHONPATH``: one version of the code, measured in a process of its
    own."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([str(tree), str(REPO_ROOT)]))
    # -P: neither the working directory nor a script's folder before PYTHONPATH
    done = subprocess.run([PYTHON, "-P", "-m", module, "--child", *args], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the timing process failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def median_steps(runs: dict[str, list[dict[str, Any]]],
                 steps: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per version, each step's median over the version's runs (each run's ``steps``)."""
    return {version: {step: round(statistics.median(run["steps"][step] for run in version_runs),
                                  3) for step in steps}
            for version, version_runs in runs.items()}


def can_raise_priority() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def raise_priority(pid: int, nice: int = SERVER_NICE) -> bool:
    """Give a server process (and its children) priority over the contenders; False if not
    allowed."""
    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        for proc in procs:
            os.setpriority(os.PRIO_PROCESS, proc.pid, nice)
    except (OSError, psutil.Error):
        return False
    return True

# Loopback servers need no politeness: every Scrapy contender runs with these.
BENCH_SCRAPY_SETTINGS: dict[str, Any] = {
    "AUTOTHROTTLE_ENABLED": False,
    "DOWNLOAD_DELAY": 0,
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,  # every site lives on one host here
}


# --- machine -------------------------------------------------------------------------------------


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def nginx_version() -> str | None:
    binary = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists()
                                       else None)
    if binary is None:
        return None
    result = subprocess.run([binary, "-v"], capture_output=True, text=True, check=False)
    return (result.stderr or result.stdout).strip().split(":", 1)[-1].strip() or None


def machine_info() -> dict[str, Any]:
    from runner.supervision.memoryguard import cgroup_limit

    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "nproc": affinity or os.cpu_count(),
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "ram_mb": round(psutil.virtual_memory().total / MB),
        "cgroup_memory_limit_mb": round(limit / MB) if (limit := cgroup_limit()) else None,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "scrapy": _version("scrapy"),
        "twisted": _version("twisted"),
        "lxml": _version("lxml"),
        "requests": _version("requests"),
        "crawlee": _version("crawlee"),
        "nginx": nginx_version(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        # Other work on the machine shifts every figure: the load when the run started.
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg")
        else None,
    }


def describe_machine(info: dict[str, Any]) -> str:
    return (f"{info['nproc']} CPU ({info['cpu_model'] or '?'}), {info['ram_mb']} MB RAM, "
            f"Python {info['python']}, Scrapy {info['scrapy']}, Twisted {info['twisted']}")


def describe_load(results: dict[str, Any]) -> str:
    """The machine's load average (1 min) when the run started and ended, if recorded."""
    start = (results.get("machine") or {}).get("load_average")
    end = results.get("load_average_end")
    if not start:
        return ""
    return f"load average {start[0]:.1f} at start" + (f", {end[0]:.1f} at end" if end else "")


# --- process trees -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProcMemory:
    pid: int
    ppid: int
    pss: int
    uss: int


def tree_memory(roots: Sequence[int]) -> list[ProcMemory]:
    """PSS and USS of every live process in the trees under ``roots`` (roots included)."""
    seen: dict[int, ProcMemory] = {}
    for root in roots:
        try:
            top = psutil.Process(root)
            procs = [top, *top.children(recursive=True)]
        except psutil.Error:
            continue
        for proc in procs:
            if proc.pid in seen:
                continue
            try:
                info = proc.memory_full_info()
                seen[proc.pid] = ProcMemory(proc.pid, proc.ppid(),
                                            int(getattr(info, "pss", info.uss)), int(info.uss))
            except psutil.Error:  # gone, or a zombie between two rounds
                continue
    return list(seen.values())


@dataclass
class MemorySampler:
    """Samples the summed PSS of the trees under ``roots`` every ``interval`` seconds."""

    roots: Callable[[], Sequence[int]]
    interval: float = 1.0
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (t, pss, procs)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pss-sampler", daemon=True)
        self._t0 = time.monotonic()

    def start(self) -> MemorySampler:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def elapsed(self) -> float:
        """Seconds since :meth:`start`, on the samples' clock."""
        return time.monotonic() - self._t0

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            procs = tree_memory(self.roots())
            if procs:
                self.samples.append((time.monotonic() - self._t0, sum(p.pss for p in procs),
                                     len(procs)))
            if self._stop.wait(self.interval):
                return

    @property
    def peak_mb(self) -> float | None:
        return round(max(s[1] for s in self.samples) / MB, 1) if self.samples else None

    def steady_mb(self, wall: float) -> float | None:
        """Median over the middle half of the run (the whole run when that has no sample)."""
        middle = [s[1] for s in self.samples if 0.25 * wall <= s[0] <= 0.75 * wall]
        values = middle or [s[1] for s in self.samples]
        return round(statistics.median(values) / MB, 1) if values else None


@dataclass
class Measured:
    """One contender's run, measured from outside."""

    returncode: int
    wall_s: float
    cpu_s: float
    peak_pss_mb: float | None
    steady_pss_mb: float | None
    first_item_s: float | None
    max_procs: int
    started_at: float
    timed_out: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "returncode": self.returncode, "wall_s": round(self.wall_s, 3),
            "cpu_s": round(self.cpu_s, 3), "peak_pss_mb": self.peak_pss_mb,
            "steady_pss_mb": self.steady_pss_mb,
            "first_item_s": None if self.first_item_s is None else round(self.first_item_s, 3),
            "max_procs": self.max_procs, "timed_out": self.timed_out,
        }


def niced(argv: Sequence[str], nice: int) -> list[str]:
    """``argv`` under ``nice -n``: nice execs it, so the pid (and ``wait4``) stay the same."""
    binary = shutil.which("nice")
    return [binary, "-n", str(nice), *argv] if nice and binary else list(argv)


def run_measured(argv: Sequence[str], *, cwd: Path, env: dict[str, str], log: Path,
                 first_item: Callable[[], float | None] | None = None,
                 sample_interval: float = 1.0, timeout: float = 900.0,
                 nice: int = 0) -> Measured:
    """Run ``argv`` to completion; wall time, tree CPU (``wait4``), tree PSS, first item.

    ``first_item`` returns the wall-clock time of the contender's first item once there is one
    (polled every 20 ms until it answers, then no more). ``nice`` lowers the contender's
    priority: see ``CONTENDER_NICE``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        start = time.time()
        proc = subprocess.Popen(niced(argv, nice), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT)
    sampler = MemorySampler(lambda: [proc.pid], sample_interval).start()
    first: float | None = None
    timed_out = False
    try:
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if first is None and first_item is not None:
                first = first_item()
            if time.time() - start > timeout and not timed_out:
                timed_out = True
                kill_tree(proc.pid)
            time.sleep(0.02 if first is None and first_item is not None else 0.1)
    finally:
        sampler.stop()
    wall = time.time() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if first is None and first_item is not None:
        first = first_item()
    return Measured(
        returncode=proc.returncode, wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime,
        peak_pss_mb=sampler.peak_mb, steady_pss_mb=sampler.steady_mb(wall),
        first_item_s=None if first is None else max(0.0, first - start),
        max_procs=max((s[2] for s in sampler.samples), default=0), started_at=start,
        timed_out=timed_out,
    )


def kill_tree(pid: int, sig: int = signal.SIGKILL) -> None:
    """Signal a process and all its descendants (only ever a tree this benchmark started)."""
    try:
        top = psutil.Process(pid)
        procs = [*top.children(recursive=True), top]
    except psutil.Error:
        return
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)


def first_file_seen(directory: Path, pattern: str) -> float | None:
    """The time the first non-empty file matching ``pattern`` was seen (now), or None."""
    try:
        for path in directory.glob(pattern):
            if path.stat().st_size > 0:
                return time.time()
    except OSError:
        pass
    return None


# --- the collector's own config ------------------------------------------------------------------


def write_collector_config(home: Path, docs_urls: Sequence[str], *,
                           settings: dict[str, Any] | None = None, max_pages: int = 1000,
                           refresh_after: str | int = "7d", **top: Any) -> Path:
    """A ``collector.yaml`` in ``home`` crawling ``docs_urls`` only; returns its path."""
    home.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "data_dir": str(home / "data"),
        "round_interval": 0,
        "stop_timeout": 20,
        "spiders": {
            "docs": {"weight": 1, "start_urls": list(docs_urls), "max_pages_per_site": max_pages,
                     "refresh_after": refresh_after,
                     "settings": {**BENCH_SCRAPY_SETTINGS, **(settings or {})}},
            "trending": {"weight": 0},
            "search": {"weight": 0},
        },
        **top,
    }
    path = home / "collector.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def collector_env(config_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_TOKEN", "SCRAPY_", "COLLECTOR_"))}
    env["COLLECTOR_CONFIG"] = str(config_path)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def plain_env(**extra: str) -> dict[str, str]:
    """An environment with no project settings: for contenders that are not the collector."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_TOKEN", "SCRAPY_", "COLLECTOR_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def worker_states(data_dir: Path) -> list[dict[str, Any]]:
    """Every ``state/workers/*.json`` the collector's workers left."""
    states = []
    for path in sorted((data_dir / "state" / "workers").glob("*.json")):
        try:
            states.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return states


def collector_pages(data_dir: Path) -> int:
    """Doc pages parsed by the collector: every parsed page yields one item, stored or dropped
    as a duplicate (the mirrors of a site's first page)."""
    return sum(int(s.get("items") or 0) + int(s.get("dropped") or 0)
               for s in worker_states(data_dir))


def runner_command() -> list[str]:
    return [PYTHON, "-m", "runner"]


# --- misc ----------------------------------------------------------------------------------------


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def default_results(benchmark: str, scale: str) -> Path:
    """``results/{benchmark}.json``; a tiny run never overwrites the full figures."""
    suffix = "" if scale == "full" else f"-{scale}"
    return RESULTS_DIR / f"{benchmark}{suffix}.json"


def publish(out: Path, results: dict[str, Any],
            render: Callable[[dict[str, Any]], str]) -> int:
    """Write a benchmark's results, print its tables and where the results went; exit 0."""
    write_json(out, results)
    print(render(results))
    print(f"results: {out}")
    return 0


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)


def fmt(value: Any, digits: int = 0) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table: first column left-aligned, the others right-aligned."""
    cells = [[str(c) for c in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(row, widths, strict=True)))

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(row) for row in cells[1:]]
    return "\n".join(out)


def ratio(value: float | None, base: float | None) -> float | None:
    if value is None or not base:
        return None
    return value / base


def scale_and_parts(prog: str, doc: str, scales: Sequence[str], parts: Sequence[str],
                    argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """``--scale``, ``--parts`` and ``--out`` of a benchmark made of parts; the parts asked."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n")[0])
    parser.add_argument("--scale", choices=tuple(scales), default="full")
    parser.add_argument("--parts", default=",".join(parts))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    chosen = [p.strip() for p in args.parts.split(",") if p.strip()]
    if set(chosen) - set(parts):
        parser.error(f"--parts: choose from {', '.join(parts)}")
    return args, chosen

