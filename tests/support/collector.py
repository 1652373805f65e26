"""Running the collector's real commands from tests: ``scrapy crawl`` and ``python -m runner``."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from scraper.utils.layout import DataLayout
from scraper.utils.sharding import Shard
from tests.support.paths import REPO_ROOT

SCRAPY = [sys.executable, "-m", "scrapy"]
RUNNER = [sys.executable, "-m", "runner"]

FAST_SETTINGS = {
    # Loopback servers need no politeness; keeps the suite fast.
    "AUTOTHROTTLE_ENABLED": False,
    "DOWNLOAD_DELAY": 0,
    "RETRY_TIMES": 2,
    # Retries still happen (the fakes' flaky pages, refused connections), without the 1 s, 2 s
    # backoff of scraper/settings.py; tests/e2e/test_faults_hostile.py proves that backoff.
    "RETRY_BACKOFF_BASE": 0.05,
    # A closed file per round, which most tests read right after it; tests/e2e/test_segments.py and
    # the kill test run the default, hourly-style segments.
    "ITEMSTORE_SEGMENT_SECONDS": 0,
}


def wait_for(predicate: Callable[[], Any], timeout: float, what: str,
             interval: float = 0.1) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout``."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def next_second() -> None:
    """Sleep into the next wall-clock second: item stamps (``collected_at``, ``observed_at``)
    are to the second, so a round started after this is stamped after every round before it."""
    time.sleep(1.0 - time.time() % 1.0 + 0.01)


PEAK_LAUNCHER = """\
import os, signal, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""
"""Runs a command and writes its peak RSS (KB) to a file. ``execve`` keeps the exec-ing
process's high-water RSS in ``ru_maxrss``, so a command a pytest worker of 350 MB starts would
report at least that; a small launcher forks it, and the fork's high-water is the launcher's."""


@dataclass(frozen=True)
class Measured:
    """A finished command: exit status, what it printed, its own peak RSS in MB."""

    returncode: int
    stdout: bytes
    stderr: str
    peak_mb: float


class Collector:
    """One collector home: ``collector.yaml`` and its ``data_dir``."""

    def __init__(self, home: Path) -> None:
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.config_path = home / "collector.yaml"
        self.data_dir = home / "data"

    def configure(self, *, github: Any = None, docs_urls: list[str] | None = None,
                  **top: Any) -> Path:
        """Write collector.yaml; ``github`` is a FakeServer (or None), docs_urls the start URLs."""
        config: dict[str, Any] = {"data_dir": str(self.data_dir), "round_interval": 1}
        spiders: dict[str, Any] = top.pop("spiders", {})
        if github is not None:
            config["github"] = {"web_url": github.url("web"), "api_url": github.url("api"),
                                "web_min_interval": 0}
        if docs_urls is not None:
            spiders.setdefault("docs", {})["start_urls"] = docs_urls
        # The fake docs host serves sitemaps only when started with sitemap=True; the tests of
        # sitemap seeding turn it on, the others count requests without its 404s.
        spiders.setdefault("docs", {}).setdefault("sitemaps", False)
        for name in ("trending", "search", "docs"):
            section = spiders.setdefault(name, {})
            section["settings"] = {**FAST_SETTINGS, **section.get("settings", {})}
        config["spiders"] = spiders
        for key, value in top.items():
            if isinstance(value, dict) and isinstance(config.get(key), dict):
                config[key].update(value)
            else:
                config[key] = value
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        return self.config_path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_TOKEN")}
        env["COLLECTOR_CONFIG"] = str(self.config_path)
        env.update(extra)
        return env

    def crawl(self, spider: str, shard: str | None = None, *args: str, timeout: float = 120,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        argv = [*SCRAPY, "crawl", spider]
        if shard is not None:
            argv += ["-a", f"shard={shard}"]
        return subprocess.run([*argv, *args], cwd=REPO_ROOT, env=env or self.env(),
                              capture_output=True, text=True, timeout=timeout)

    def scrapy(self, *args: str, timeout: float = 120, cwd: Path = REPO_ROOT
               ) -> subprocess.CompletedProcess[str]:
        """Any ``scrapy`` command (shell, fetch, parse, list …) with this collector's config."""
        return subprocess.run([*SCRAPY, *args], cwd=cwd, env=self.env(), capture_output=True,
                              text=True, timeout=timeout)

    def start_crawl(self, spider: str, shard: str | None = None,
                    env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        argv = [*SCRAPY, "crawl", spider] + (["-a", f"shard={shard}"] if shard else [])
        return subprocess.Popen(argv, cwd=REPO_ROOT, env=env or self.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def runner(self, *args: str, timeout: float = 180,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*RUNNER, *args], cwd=self.home, env=env or self.env(),
                              capture_output=True, text=True, timeout=timeout)

    def runner_measured(self, *args: str, timeout: float = 180) -> Measured:
        """``python -m runner ARGS`` with its stdout as bytes (``archive show`` prints a page
        as served) and its own peak RSS (see :data:`PEAK_LAUNCHER`)."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
                tempfile.NamedTemporaryFile("r") as peak:
            proc = subprocess.Popen([sys.executable, "-c", PEAK_LAUNCHER, peak.name, *RUNNER,
                                     *args], cwd=self.home, env=self.env(), stdout=out,
                                    stderr=err, start_new_session=True)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise AssertionError(f"runner {' '.join(args)} ran past {timeout}s") from None
            out.seek(0)
            err.seek(0)
            return Measured(proc.returncode, out.read(), err.read().decode(),
                            int(peak.read()) / 1024)

    def start_runner(self, *args: str, env: dict[str, str] | None = None
                     ) -> subprocess.Popen[str]:
        return subprocess.Popen([*RUNNER, *args], cwd=self.home, env=env or self.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def item_files(self, spider: str) -> list[Path]:
        return sorted((self.data_dir / "items" / spider).glob("*.jsonl"))

    def items(self, spider: str) -> list[dict[str, Any]]:
        rows = []
        for path in self.item_files(spider):
            with open(path, encoding="utf-8") as handle:
                rows.extend(json.loads(line) for line in handle)
        return rows

    def log(self, spider: str, shard: str = "0/1") -> str:
        i, n = shard.split("/")
        path = self.data_dir / "logs" / f"{spider}-{i}of{n}.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def stats(self, spider: str, shard: str = "0/1") -> dict[str, Any]:
        """The worker's last Scrapy stats, from its state file."""
        i, n = shard.split("/")
        path = self.data_dir / "state" / "workers" / f"{spider}-{i}of{n}.json"
        return json.loads(path.read_text())["stats"]

    # --- added for the crawl/store tests ---------------------------------------------------------

    def start_crawl_args(self, spider: str, shard: str | None = None, *args: str,
                         env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """Like :meth:`start_crawl`, with extra command-line arguments (``-s KEY=VALUE``…)."""
        argv = [*SCRAPY, "crawl", spider] + (["-a", f"shard={shard}"] if shard else [])
        return subprocess.Popen([*argv, *args], cwd=REPO_ROOT, env=env or self.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    @staticmethod
    def wait_all(procs: list[subprocess.Popen[str]], timeout: float = 120
                 ) -> list[subprocess.CompletedProcess[str]]:
        """Wait for processes started together; a hung one is killed and reported."""
        done = []
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                err += f"\n[killed after {timeout}s]"
            done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
        return done

    def worker_state_path(self, spider: str, shard: str = "0/1") -> Path:
        """A spider-shard's state file, written once its round has opened."""
        return DataLayout(self.data_dir).worker_state(spider, Shard.parse(shard))

    def worker_state(self, spider: str, shard: str = "0/1") -> dict[str, Any]:
        """The whole state file of a spider-shard (pid, started_at, updated_at, stats…)."""
        return json.loads(self.worker_state_path(spider, shard).read_text())

    def items_by_file(self, spider: str) -> dict[str, list[dict[str, Any]]]:
        """Item lines per visible ``.jsonl`` file name."""
        result = {}
        for path in self.item_files(spider):
            with open(path, encoding="utf-8") as handle:
                result[path.name] = [json.loads(line) for line in handle]
        return result

    def update_config(self, changes: dict[str, Any]) -> Path:
        """Deep-merge ``changes`` into the collector.yaml :meth:`configure` wrote."""

        def merge(base: dict[str, Any], new: dict[str, Any]) -> None:
            for key, value in new.items():
                if isinstance(value, dict) and isinstance(base.get(key), dict):
                    merge(base[key], value)
                else:
                    base[key] = value

        config = yaml.safe_load(self.config_path.read_text()) or {}
        merge(config, changes)
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        return self.config_path


def peak_rss_mb(pid: int) -> float | None:
    """A process's peak resident set so far (``VmHWM``), in MB; None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_watched(collector: Collector, spider: str, timeout: float) -> tuple[int, float, float]:
    """Run ``scrapy crawl spider``; returns (exit status, seconds, peak RSS in MB)."""
    started = time.time()
    proc = collector.start_crawl(spider)
    peak = 0.0
    try:
        while proc.poll() is None:
            if time.time() - started > timeout:
                proc.kill()
                raise AssertionError(f"scrapy crawl {spider} still running after {timeout}s")
            peak = max(peak, peak_rss_mb(proc.pid) or 0.0)
            time.sleep(0.05)
    finally:
        _, err = proc.communicate()
    assert "Traceback" not in err, err
    return proc.returncode, time.time() - started, peak


def runner_watched(collector: Collector, *args: str, timeout: float
                   ) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``python -m runner ARGS``; returns what it did and its peak RSS in MB."""
    proc = collector.start_runner(*args)
    peak, started = 0.0, time.time()
    try:
        while proc.poll() is None:
            if time.time() - started > timeout:
                proc.kill()
                raise AssertionError(f"python -m runner {' '.join(args)} still running after "
                                     f"{timeout}s")
            peak = max(peak, peak_rss_mb(proc.pid) or 0.0)
            time.sleep(0.05)
    finally:
        out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), peak


def generous_budget(collector: Collector, **github: Any) -> None:
    """The GitHub budget's first guess as generous as the fake's limits: no pacing here."""
    config = yaml.safe_load(collector.config_path.read_text())
    config["github"] = {**config.get("github", {}), **github,
                        "limits": {"search": {"limit": 100000, "window": 60},
                                   "core": {"limit": 100000, "window": 3600}}}
    collector.config_path.write_text(yaml.safe_dump(config, sort_keys=False))


def in_child(code: str, *args: Any) -> Any:
    result = subprocess.run([sys.executable, "-c", code, *map(str, args)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# The summary line counts one in the singular ("1 page", "1 duplicate dropped").
SUMMARY = re.compile(r"^docs (\d+/\d+): (\d+) pages?, (\d+) new items?, (\d+) skipped as "
                     r"collected, (\d+) duplicates? dropped \((.+)\)$", re.MULTILINE)


PAGE = re.compile(r"^/site\d+/(page\d+\.html|index\.html|flaky\.html|moved\.html|)$")


def counts(docs) -> Counter[str]:
    return Counter(r["path"] for r in docs.stats()["requests"])


def fetched_since(docs, before: Counter[str]) -> Counter[str]:
    now = counts(docs)
    return Counter({p: n - before[p] for p, n in now.items() if n > before[p] and PAGE.match(p)})


def summary(stderr: str) -> tuple[str, ...]:
    found = SUMMARY.findall(stderr)
    assert len(found) == 1, stderr[-2000:]
    return found[0]


MEMORY_CEILING_MB = 200
"""The most a spider may take (RSS) on the hostile pages of tests/support/fakes/hostile.py."""


def error_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if "] ERROR: " in line]


def mentions(line: str, url: str) -> bool:
    """``url`` appears in ``line`` as a whole URL (not as the prefix of a longer one)."""
    return re.search(re.escape(url) + r"(?![\w./-])", line) is not None
