"""CPU of the runner's short commands, the ones cron and an operator run between rounds.

    python -m benchmarks.commands [--repeat 3]

Against one data dir after one ``python -m runner --once`` round of the docs spider (a fake
docs site of 5 pages, a config with ``spiders.docs.settings``), runs each command ``--repeat``
times as its own process and takes the median user + system CPU (the reaped child's rusage).
Baselines in the same run: ``python -c pass`` (the interpreter alone) and ``python -c "import
scrapy"`` (what a command pays that imports Scrapy). Says too whether each command imported
Scrapy (``-X importtime``). Results: ``benchmarks/results/commands.json``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import (
    PYTHON,
    RESULTS_DIR,
    collector_env,
    describe_machine,
    format_table,
    machine_info,
    publish,
    runner_command,
    write_collector_config,
)
from tests.support.fakes.launcher import start_fake_docs

COMMANDS = (("status",), ("watchdog",), ("size", "--every", "100MB"), ("stop",), ("catalog",))
"""As cron and an operator run them. With no runner running, ``status`` exits 3 and
``watchdog`` 1 (it cannot know a command line to restart): both after reading the config."""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, bool]:
    """One run of ``argv``: its user + system CPU seconds, exit status, and whether it
    imported Scrapy."""
    before = children_cpu()
    done = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=120)
    imported = any(line.rpartition("|")[2].strip() == "scrapy"
                   for line in done.stderr.splitlines() if line.startswith("import time:"))
    return children_cpu() - before, done.returncode, imported


def run(repeat: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="hubcollect-commands-"))
    fake = start_fake_docs(work / "fake", sites=1, pages=5)
    try:
        config = write_collector_config(work / "home", [f"{fake.url()}/site0/"],
                                        settings={"CONCURRENT_REQUESTS_PER_DOMAIN": 4})
        env = collector_env(config)
        home = config.parent
        once = subprocess.run([*runner_command(), "--once", "--workers", "1", "--spiders",
                               "docs"], cwd=home, env=env, capture_output=True, text=True,
                              timeout=120)
        if once.returncode != 0:
            raise SystemExit(f"the --once round failed: {once.stderr.strip()[-500:]}")
        programs = {"python -c pass": [PYTHON, "-c", "pass"],
                    "import scrapy": [PYTHON, "-c", "import scrapy"],
                    **{f"runner {' '.join(args)}": [*runner_command(), *args] for args in COMMANDS}}
        rows = []
        for label, argv in programs.items():
            runs = [measure(argv, env, home) for _ in range(repeat)]
            rows.append({"command": label, "cpu_s": round(statistics.median(r[0] for r in runs), 3),
                         "exit": runs[-1][1], "imports_scrapy": runs[-1][2]})
    finally:
        fake.stop()
    scrapy_s = next(r["cpu_s"] for r in rows if r["command"] == "import scrapy")
    for row in rows:
        row["x_import_scrapy"] = round(row["cpu_s"] / scrapy_s, 2) if scrapy_s else None
    return {"benchmark": "commands", "repeat": repeat, "machine": machine_info(), "rows": rows}


def render(results: dict[str, Any]) -> str:
    table = format_table(
        ["command", "CPU s (median)", "× import scrapy", "imports Scrapy", "exit"],
        [[r["command"], f"{r['cpu_s']:.3f}", r["x_import_scrapy"],
          "yes" if r["imports_scrapy"] else "no", r["exit"]] for r in results["rows"]])
    return f"{describe_machine(results['machine'])}; median of {results['repeat']}\n{table}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.commands",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "commands.json")
    args = parser.parse_args(argv)
    return publish(args.out, run(args.repeat), render)


if __name__ == "__main__":
    raise SystemExit(main())
