"""``python -m runner``: run the workers (default), ``status``, ``stop``.

Every subcommand takes ``--config PATH`` before or after its own options; without it the config
comes from ``$COLLECTOR_CONFIG``, else ``./collector.yaml``, else the built-in defaults. Anything
the user must fix is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

from runner.catalog.commands import DATASET_COMMANDS
from runner.core.runargs import add_run_options
from runner.core.runargs import config_option as _config_option
from runner.core.runargs import redis_url_arg as _redis_url
from runner.core.runargs import with_default_command as _with_default_command
from runner.core.usage import PROG, OneLineParser, UsageError, usage_error
from scraper.config.collector import (
    CollectorConfig,
    ConfigError,
    load_config,
    resolve_config_path,
)
from scraper.utils.layout import DataLayout
from scraper.utils.urlmask import mask_argv


def build_parser(only: str | None = None) -> OneLineParser:
    """The whole argparse tree; with ``only``, just that subcommand's branch, so a command imports
    no other command's module (``status`` from cron pays for none of them)."""
    parser = OneLineParser(prog=PROG, description="Run and watch the hubcollect workers.")
    _config_option(parser, None)
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)

    if only in (None, "run"):
        run = sub.add_parser("run", help="run the workers in the foreground (the default)")
        _config_option(run, argparse.SUPPRESS)
        add_run_options(run)
        run.set_defaults(handler=cmd_run)

    if only in (None, "status"):
        status = sub.add_parser("status", help="one row per worker, and totals")
        _config_option(status, argparse.SUPPRESS)
        status.add_argument("--json", action="store_true")
        status.add_argument("--redis-url", type=_redis_url, metavar="URL",
                            help="show this Redis's cluster (else the runner's, config redis_url)")
        status.add_argument("--cluster", action="store_true",
                            help="every box of the cluster (distributed mode) and the shared "
                                 "budget")
        status.set_defaults(handler=cmd_status)

    if only in (None, "stop"):
        stop = sub.add_parser("stop", help="SIGTERM the running runner and wait until it is gone")
        _config_option(stop, argparse.SUPPRESS)
        stop.set_defaults(handler=cmd_stop)

    for name, module in EXTRA_COMMANDS:
        if only in (None, name):
            register = importlib.import_module(module).register
            register(sub.add_parser(name), lambda p: _config_option(p, argparse.SUPPRESS))
    _list_in_help(sub)
    parser.epilog = f"Docs: {DOCS_DIR}/index.md; each subcommand's --help names its page."
    for name, command in sub.choices.items():
        command.epilog = f"Explained in {DOCS_DIR}/{DOCS_PAGES[name]}."
    return parser


DOCS_DIR = "docs"
"""Where the docs site's pages are in the repository (``mkdocs serve`` shows them)."""
DOCS_PAGES = {
    "run": "running.md", "status": "running.md", "stop": "running.md", "reload": "running.md",
    "watchdog": "operations.md", "size": "operations.md", "install-cron": "operations.md",
    "metrics": "operations.md", "catalog": "dataset.md", "export": "dataset.md",
    "report": "dataset.md", "view": "dataset.md", "reparse": "dataset.md",
    "history": "dataset.md", "archive": "dataset.md",
    "gaps": "operations.md",
}
"""The page that explains each subcommand (tests/runner/cli/test_cli_help.py holds every one to
a page that exists and mentions it)."""


def _list_in_help(sub: argparse._SubParsersAction) -> None:
    """``--help`` lists every subcommand with one line: the added ones say theirs in their
    description (argparse lists only those given ``help=`` when they were added)."""
    listed = {action.dest for action in sub._choices_actions}
    for name, command in sub.choices.items():
        if name not in listed:
            line = (command.description or "").split(". ")[0].rstrip(".")
            sub._choices_actions.append(sub._ChoicesPseudoAction(name, (), line))


# Subcommands added by other modules: (name, the module whose ``register(parser,
# add_config_option)`` adds it), imported only when the command line names that subcommand.
EXTRA_COMMANDS: list[tuple[str, str]] = []
EXTRA_COMMANDS.append(("reload", "runner.supervision.reload"))
# Operations (runner/ops/): what cron runs, and what installs it.
EXTRA_COMMANDS.append(("watchdog", "runner.ops.watchdog"))
EXTRA_COMMANDS.append(("size", "runner.ops.size"))
EXTRA_COMMANDS.append(("install-cron", "runner.ops.cron"))
EXTRA_COMMANDS.append(("metrics", "runner.status.metrics"))
EXTRA_COMMANDS.append(("gaps", "runner.status.gaps"))
# The dataset (runner/catalog/): the catalog and what is made from it.
EXTRA_COMMANDS.extend(DATASET_COMMANDS)
COMMANDS = ["run", "status", "stop", *(name for name, _ in EXTRA_COMMANDS)]


def chosen_command(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names, else None (no command yet, a mistyped one, or ``--help``
    before it: the whole tree is built, so argparse lists every choice)."""
    for i, arg in enumerate(argv):
        if arg in ("-h", "--help"):
            return None
        if arg.startswith("-") or (i and argv[i - 1] == "--config"):
            continue
        return arg if arg in COMMANDS else None
    return None


def _check_options(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """``unknown option --wokers``, before argparse would rather say that --workers is missing.
    Abbreviations argparse accepts (``--work``) pass."""
    known = set(parser._option_string_actions)
    command = None
    # Down through nested subcommands (``archive show``): each level's options are known.
    while (sub := next((a for a in parser._actions
                        if isinstance(a, argparse._SubParsersAction)), None)) is not None:
        word = next((arg for arg in argv if arg in sub.choices), None)
        if word is None:
            break
        command = word if command is None else f"{command} {word}"
        parser = sub.choices[word]
        known |= set(parser._option_string_actions)
    for arg in argv:
        if arg == "--":
            return
        name = arg.split("=", 1)[0]
        if (len(name) < 2 or not name.startswith("-") or name[1].isdigit()
                or name[1] == "." or any(option.startswith(name) for option in known)):
            continue
        raise UsageError(f"unknown option {name}" + (f" for '{command}'" if command else ""))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        argv = _with_default_command(argv, COMMANDS)
        parser = build_parser(chosen_command(argv))
        _check_options(parser, argv)
        args = parser.parse_args(argv)
        config = read_config(args)
    except (UsageError, ConfigError) as exc:
        return usage_error(str(exc))
    return args.handler(args, config)


def read_config(args: argparse.Namespace) -> CollectorConfig:
    """The config file and environment, read and validated; ``--redis-url`` wins over both.
    A run's workers get this very object (scraper/addon.py), never a file or a variable."""
    config = load_config(args.config)
    if getattr(args, "redis_url", None):
        config = replace(config, redis_url=args.redis_url)
    return config


# --- run ------------------------------------------------------------------------------------------


def _setup_logging(layout: DataLayout) -> None:
    import logging.handlers

    layout.logs_dir.mkdir(parents=True, exist_ok=True)
    formatter = logging.Formatter("%(asctime)s [%(name)s] %(levelname)s: %(message)s")
    from scraper import settings as defaults

    to_file = logging.handlers.RotatingFileHandler(
        layout.runner_log, maxBytes=defaults.LOG_MAX_BYTES,
        backupCount=defaults.LOG_BACKUP_COUNT, encoding="utf-8")
    handlers: list[logging.Handler] = [to_file]
    # A runner the watchdog started has its stderr appended to runner.log already: a second
    # handler would write every warning twice.
    if not _same_file(sys.stderr, layout.runner_log):
        to_stderr = logging.StreamHandler()
        to_stderr.setLevel(logging.WARNING)  # the terminal gets the plan (stdout) and problems
        handlers.append(to_stderr)
    root = logging.getLogger("runner")
    root.setLevel(logging.INFO)
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.propagate = False
    # On a full disk the log line is lost; a traceback on stderr would help nobody.
    logging.raiseExceptions = False


def _same_file(stream: object, path: os.PathLike[str]) -> bool:
    try:
        mine = os.fstat(stream.fileno())  # type: ignore[attr-defined]
        other = os.stat(path)
    except (OSError, ValueError, AttributeError):
        return False
    return (mine.st_dev, mine.st_ino) == (other.st_dev, other.st_ino)


def cmd_run(args: argparse.Namespace, config: CollectorConfig) -> int:
    from runner.core.pidfile import PidFile
    from runner.supervision.memoryguard import MemoryGuard, memory_budget
    from runner.supervision.plan import make_plan
    from runner.supervision.supervisor import Supervisor, preload
    from scraper.utils.diskspace import probe_writable
    from scraper.utils.pidlock import LockFileError, PidLockHeld

    # A reload asked for while starting (preload takes seconds) must not kill the runner, as
    # SIGHUP's default would; the supervisor listens for it once it runs.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    layout = DataLayout(config.data_dir)
    try:
        redis_url = _distributed_mode(config, once=args.once)
    except UsageError as exc:
        return usage_error(str(exc))
    except RedisAway as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    plan = make_plan(config, args.workers, args.spiders, shared_queue=bool(redis_url))
    print(plan.describe(), flush=True)
    if plan.total == 0:
        return usage_error("nothing to run: the chosen spiders have no start entries or weight 0")
    if redis_url:
        from runner.supervision.supervisor import DISTRIBUTED_MODULES

        versions = preload(DISTRIBUTED_MODULES)
    else:
        versions = preload()
    budget, source = memory_budget(args.memory_budget or config.memory_budget)
    guard = MemoryGuard(layout.memory_file, budget, source)
    estimate = guard.estimate(plan.total)
    if not estimate.fits and not args.force:
        return usage_error(estimate.refusal())
    try:  # before anything starts: a read-only logs/ or items/<spider>/ is one line
        for directory in (layout.logs_dir, *(layout.items_dir(spider)
                                             for spider, n in plan.counts.items() if n)):
            probe_writable(directory)
    except OSError as exc:
        return usage_error(f"data_dir {config.data_dir}: cannot write {exc.filename}: "
                           f"{exc.strerror}")
    pidfile = PidFile(layout.runner_pidfile)
    try:
        pidfile.acquire()
    except PidLockHeld as exc:
        return usage_error(f"a runner is already running on {config.data_dir} (pid {exc.pid}); "
                           f"'{PROG} stop' stops it")
    except LockFileError as exc:  # a read-only (or full) data_dir
        return usage_error(exc.strerror or str(exc))
    layout.stopped_mark.unlink(missing_ok=True)  # started again: watched again
    _setup_logging(layout)
    logging.getLogger("runner").info(
        "versions: %s", ", ".join(f"{name} {version}" for name, version in versions))
    if not estimate.fits:
        logging.getLogger("runner").warning("--force: %s", estimate.refusal())
    config_path = resolve_config_path(args.config)
    supervisor = Supervisor(
        config, plan, guard, once=args.once,
        config_path=str(config_path.absolute()) if config_path else None,
        command=mask_argv([sys.executable, "-m", "runner", *sys.argv[1:]]),
        redis_url=redis_url,
        reread=lambda: read_config(args),
        replan=lambda new: make_plan(new, args.workers, args.spiders,
                                     shared_queue=bool(redis_url)),
    )
    try:
        return supervisor.run()
    finally:
        pidfile.release()


class RedisAway(Exception):
    """``--once`` with its Redis unreachable: the message is the one line the user sees."""


def _distributed_mode(config: CollectorConfig, *, once: bool = False) -> str | None:
    """The Redis URL (config.redis_url: ``--redis-url``, else $COLLECTOR_REDIS_URL, else the
    file's), which the workers get with the config object; None: one machine. A collector
    that runs forever waits out an outage; ``--once`` (one round, then an exit status a cron
    job reads) raises :class:`RedisAway` rather than wait for a Redis that may never come."""
    import importlib.util

    url = config.redis_url
    if not url:
        return None
    if importlib.util.find_spec("scrapy_redis") is None:
        raise UsageError("--redis-url needs scrapy-redis: pip install -e '.[redis]'")
    from scraper.cluster.registry import mask, quick_client

    client = quick_client(url)
    try:
        client.ping()
    except Exception as exc:  # workers wait for it; say so once, here
        if once:
            raise RedisAway(f"Redis {mask(url)} is not reachable ({exc}): --once runs no round "
                            "without it") from None
        print(f"{PROG}: warning: Redis {mask(url)} is not reachable now ({exc}); the workers "
              "wait for it", file=sys.stderr)
    finally:
        client.close()
    return url


# --- status and stop ------------------------------------------------------------------------------


NOT_RUNNING = 3
"""``status``'s exit status when no runner is running (a finished ``--once`` run included), as
an init script's ``status`` says "program is not running": scripts test for it."""


def cmd_status(args: argparse.Namespace, config: CollectorConfig) -> int:
    from runner.core.resolved import run_config
    from runner.status.render import collect_status, iso_times, render_status

    if getattr(args, "cluster", False) and not config.redis_url:
        return usage_error("status --cluster: no cluster here: give --redis-url URL (or "
                           "redis_url in the config)")
    status = collect_status(DataLayout(config.data_dir), config.redis_url, run_config(config))
    code = 0 if status["runner"]["alive"] else NOT_RUNNING
    if getattr(args, "cluster", False):
        from runner.status.clusterview import render_cluster_view

        status = {"cluster": status["cluster"], "budget": status["budget"]}
        code, text = render_cluster_view(status)
        if args.json:
            text = json.dumps(iso_times(status), indent=1, default=str)
    else:
        text = (json.dumps(iso_times(status), indent=1, default=str) if args.json
                else render_status(status))
    try:
        print(text, flush=True)
    except BrokenPipeError:  # `status | head -1`: the reader had enough, which is no error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing left to flush at exit
        os.close(devnull)
    return code


def mark_stopped(path: Path, pid: int | None) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"stopped by {PROG} stop at {stamp} (runner pid {pid})\n")
    except OSError as exc:
        print(f"{PROG}: warning: cannot write {path} ({exc.strerror}): the watchdog will "
              f"restart the collector", file=sys.stderr)


def cmd_stop(args: argparse.Namespace, config: CollectorConfig) -> int:
    from runner.core.pidfile import running_pid

    layout = DataLayout(config.data_dir)
    pid = running_pid(layout.runner_pidfile)
    # Before the signal: a watchdog that runs while the runner stops must not restart it.
    mark_stopped(layout.stopped_mark, pid)
    if pid is None:
        print(f"no runner is running on {config.data_dir}", file=sys.stderr)
        return 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + config.stop_timeout + 15
    while running_pid(layout.runner_pidfile) is not None:
        if time.monotonic() > deadline:
            print(f"{PROG}: runner pid {pid} is still running after SIGTERM", file=sys.stderr)
            return 1
        time.sleep(0.2)
    print(f"stopped runner pid {pid}")
    return 0
