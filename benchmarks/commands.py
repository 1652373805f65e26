"""CPU of the runner's short commands, the ones cron and an operator run between rounds.

    python -m benchmarks.commands [--repeat 3] [--days 365] [--before 3611419]

Against one data dir holding ``--days`` days of closed segments (``benchmarks.datasize``'s
generator: about 530 files a day; ``catalog`` is then left out) and then one ``python -m runner
--once`` round of the docs spider (a fake docs site of 5 pages, a config with
``spiders.docs.settings``), runs each command ``--repeat`` times as its own process and takes
the median user + system CPU (the reaped child's rusage). The project's modules are
byte-compiled first, as an installed package is (the commands' cost is then their imports, not
compiling them). Baselines in the same run: ``python -c pass`` (the interpreter alone) and
``python -c "import scrapy"`` (what a command pays that imports Scrapy). ``--before COMMIT``
runs each command too from that commit's tree (``git archive``; empty: skip) on the same data
dir. Says too whether each command imported Scrapy (``-X importtime``). Results:
``benchmarks/results/commands.json``.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import (
    PYTHON,
    REPO_ROOT,
    RESULTS_DIR,
    collector_env,
    describe_machine,
    format_table,
    machine_info,
    publish,
    runner_command,
    source_tree,
    write_collector_config,
)
from benchmarks.datasize import make_data_dir
from tests.support.fakes.launcher import start_fake_docs

COMMANDS = (("status",), ("metrics",), ("watchdog",), ("size", "--every", "100MB"), ("stop",),
            ("catalog",))
"""As cron and an operator run them. With no runner running, ``status`` exits 3 and
``watchdog`` 1 (it cannot know a command line to restart): both after reading the config."""
COMMANDS_AT_A_YEAR = tuple(args for args in COMMANDS if args != ("catalog",))
"""With ``--days``: a first ``catalog`` build of a year of segments takes minutes (that is
``benchmarks.catalogio``'s subject), not the short command measured here."""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    """One run of ``argv``: its user + system CPU seconds and exit status."""
    before = children_cpu()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, timeout=120)
    return children_cpu() - before, done.returncode


def imports_scrapy(argv: list[str], env: dict[str, str], cwd: Path) -> bool:
    """Whether ``argv`` imports Scrapy: a run of its own, since ``-X importtime``'s report of
    every import costs CPU the timed runs must not carry."""
    done = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=120)
    return any(line.rpartition("|")[2].strip() == "scrapy"
               for line in done.stderr.splitlines() if line.startswith("import time:"))


PACKAGES = ("runner", "scraper", "pipelines")
"""The project's top-level packages: what ``python -m runner`` imports of the tree it runs."""


def compiled_tree(root: Path) -> None:
    """Byte-compile the project's packages under ``root`` (their ``__pycache__``), as ``pip
    install`` does: with ``PYTHONDONTWRITEBYTECODE`` set every run would compile them again."""
    subprocess.run([PYTHON, "-m", "compileall", "-q", *PACKAGES], cwd=root, check=True,
                   stdout=subprocess.DEVNULL, timeout=300)


def tree_at(commit: str, into: Path) -> Path:
    """The project's packages as ``commit`` had them, extracted under ``into``."""
    source_tree(commit, PACKAGES, into)
    compiled_tree(into)
    return into


def run(repeat: int, days: int = 365, before: str = "") -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="hubcollect-commands-"))
    fake = start_fake_docs(work / "fake", sites=1, pages=5)
    try:
        config = write_collector_config(work / "home", [f"{fake.url()}/site0/"],
                                        settings={"CONCURRENT_REQUESTS_PER_DOMAIN": 4})
        env = collector_env(config)
        home = config.parent
        if days:
            make_data_dir(home / "data", days)
        compiled_tree(REPO_ROOT)
        old_env = ({**env, "PYTHONPATH": str(tree_at(before, work / "before"))} if before
                   else None)
        once = subprocess.run([*runner_command(), "--once", "--workers", "1", "--spiders",
                               "docs"], cwd=home, env=env, capture_output=True, text=True,
                              timeout=120)
        if once.returncode != 0:
            raise SystemExit(f"the --once round failed: {once.stderr.strip()[-500:]}")
        programs = [("python -c pass", [PYTHON, "-c", "pass"], env),
                    ("import scrapy", [PYTHON, "-c", "import scrapy"], env)]
        for args in COMMANDS if not days else COMMANDS_AT_A_YEAR:
            label, argv = f"runner {' '.join(args)}", [*runner_command(), *args]
            programs.append((label, argv, env))
            if old_env is not None:  # right after: ``stop`` changes what ``watchdog`` does
                programs.append((f"{label} (before)", argv, old_env))
        rows = []
        for label, argv, run_env in programs:
            runs = [measure(argv, run_env, home) for _ in range(repeat)]
            rows.append({"command": label, "cpu_s": round(statistics.median(r[0] for r in runs), 3),
                         "exit": runs[-1][1],
                         "imports_scrapy": imports_scrapy(argv, run_env, home)})
    finally:
        fake.stop()
        shutil.rmtree(work, ignore_errors=True)  # a year is 190,000 files
    scrapy_s = next(r["cpu_s"] for r in rows if r["command"] == "import scrapy")
    for row in rows:
        row["x_import_scrapy"] = round(row["cpu_s"] / scrapy_s, 2) if scrapy_s else None
    return {"benchmark": "commands", "repeat": repeat, "days": days, "before": before,
            "machine": machine_info(), "rows": rows}


def render(results: dict[str, Any]) -> str:
    table = format_table(
        ["command", "CPU s (median)", "× import scrapy", "imports Scrapy", "exit"],
        [[r["command"], f"{r['cpu_s']:.3f}", r["x_import_scrapy"],
          "yes" if r["imports_scrapy"] else "no", r["exit"]] for r in results["rows"]])
    before = f"; (before): commit {results['before']}" if results.get("before") else ""
    return (f"{describe_machine(results['machine'])}; median of {results['repeat']}; "
            f"{results.get('days', 0)} days of segments{before}\n{table}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.commands",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command")
    parser.add_argument("--days", type=int, default=365,
                        help="days of closed segments in the data dir (0: one round only)")
    parser.add_argument("--before", default="3611419", metavar="COMMIT",
                        help="also run each command from this commit's tree, or a project "
                             "directory's ('': skip)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "commands.json")
    args = parser.parse_args(argv)
    return publish(args.out, run(args.repeat, args.days, args.before), render)


if __name__ == "__main__":
    raise SystemExit(main())
