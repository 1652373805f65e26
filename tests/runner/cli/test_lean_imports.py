"""``python -m runner status``, ``metrics`` and ``watchdog``, the commands cron and an operator run
every few minutes, import none of what they do not use: no Scrapy, Twisted or lxml, no other
subcommand's module (the catalog build, the watchdog, the exporters), no YAML parser when no
YAML file is read. Checked in ``sys.modules`` of a child process that runs the command as
``python -m`` does; the CPU it saves is ``python -m benchmarks.commands``' figure, not this
test's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

NEVER = ("scrapy", "twisted", "lxml", "parsel", "runner.catalog.build", "runner.catalog.export",
         "runner.catalog.report", "runner.catalog.viewer", "runner.catalog.reparse",
         "runner.ops.watchdog", "runner.ops.notify", "runner.supervision.supervisor",
         "urllib.request", "logging.handlers",
         # a few ms each: OpenSSL's start-up, bz2 and lzma (shutil), zlib's wrappers
         "hashlib", "shutil", "gzip")
"""Modules (and their submodules) neither command imports."""

CHILD = """
import json, runpy, sys
sys.argv = ["runner", *sys.argv[2:]]
code = 0
try:
    runpy.run_module("runner", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
with open(OUT, "w") as out:
    json.dump({"modules": sorted(sys.modules), "code": code}, out)
"""


def imported(tmp_path: Path, *argv: str, config: Path | None = None) -> tuple[set[str], int]:
    """The modules ``python -m runner *argv`` had imported when it exited, and its status."""
    out = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COLLECTOR_", "SCRAPY_"))}
    env["PYTHONPATH"] = str(REPO_ROOT)
    if config is not None:
        env["COLLECTOR_CONFIG"] = str(config)
    code = CHILD.replace("OUT", repr(str(out)))
    subprocess.run([sys.executable, "-c", code, "runner", *argv], cwd=tmp_path, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    done = json.loads(out.read_text())
    return set(done["modules"]), done["code"]


def offending(modules: set[str], banned: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == b or m.startswith(b + ".") for b in banned))


RAN = {"status": ("runner.status.render", 3), "metrics": ("runner.status.render", 0),
       "watchdog": ("runner.ops.liveness", 1)}
"""Each command, a module only its work imports, and its exit status here (no runner has
run: status 3, the watchdog 1, it cannot know a command line to restart)."""


@pytest.mark.parametrize("command", sorted(RAN))
def test_a_command_without_a_yaml_file_imports_nothing_it_does_not_use(tmp_path: Path,
                                                                      command: str) -> None:
    modules, code = imported(tmp_path, command)
    ran, status = RAN[command]
    assert (ran in modules, code) == (True, status)  # the command did its work
    # The watchdog's own module is its handler; no other subcommand's, no webhook's urllib.
    own = ("runner.ops.watchdog", "runner.ops.notify") if command == "watchdog" else ()
    banned = tuple(b for b in NEVER if b not in own)
    assert offending(modules, (*banned, "yaml")) == []


def test_yaml_is_imported_when_a_yaml_file_is_read(tmp_path: Path) -> None:
    config = tmp_path / "collector.yaml"
    config.write_text(f"data_dir: {tmp_path / 'data'}\n", encoding="utf-8")
    modules, code = imported(tmp_path, "status", config=config)
    assert code == 3
    assert "yaml" in modules
    assert offending(modules, NEVER) == []


def test_a_bad_yaml_file_is_still_one_line(tmp_path: Path) -> None:
    config = tmp_path / "collector.yaml"
    config.write_text("data_dir: [unclosed\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "runner", "status"], cwd=tmp_path,
                          env={**os.environ, "COLLECTOR_CONFIG": str(config),
                               "PYTHONPATH": str(REPO_ROOT)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "invalid YAML" in done.stderr
