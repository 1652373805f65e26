"""``python -m runner install-cron``: the watchdog and size-monitor lines in the user's crontab.

The two lines live between marker comments, so running it again replaces them (new options, a
moved checkout) and leaves every other line alone. Cron's PATH is bare and its directory is
``$HOME``, so each line names everything absolutely: the directory to ``cd`` to (where this was
run, which is where ``./collector.yaml`` and a relative ``data_dir`` are found), the interpreter
(``COLLECTOR_PYTHON``, this one), the config (``COLLECTOR_CONFIG``) and the script.

By default it goes through ``crontab -l`` / ``crontab -``. ``--crontab-file`` edits a file
instead: a system crontab (``/etc/crontab``, ``/etc/cron.d/*``) gets the user column those need.
"""

from __future__ import annotations

import argparse
import os
import pwd
import re
import shlex
import shutil
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

from runner.core.argtypes import add_min_workers, size_text
from runner.core.usage import PROG, usage_error
from scraper.config.collector import CONFIG_ENV, CollectorConfig, resolve_config_path

BEGIN = "# >>> hubcollect >>>"
END = "# <<< hubcollect <<<"
SCHEDULE = "*/5 * * * *"
SCRIPTS_DIR = Path(__file__).resolve().parents[2] / "scripts"


class CronError(Exception):
    """One line for the user, exit 2."""


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = "Add or update the watchdog and size-monitor lines in the crontab."
    add_config_option(parser)
    add_min_workers(parser, "passed to the watchdog (default: all the plan's workers)")
    parser.add_argument("--every", type=size_text, default="100MB", metavar="SIZE",
                        help="size-monitor step (default 100MB)")
    parser.add_argument("--target", type=size_text, metavar="SIZE",
                        help="size-monitor target, shown as '… of SIZE'")
    parser.add_argument("--no-watchdog", action="store_true",
                        help="only the size monitor (when systemd keeps the runner up)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the resulting crontab, change nothing")
    parser.add_argument("--crontab-file", metavar="PATH",
                        help="edit this file instead of the user's crontab")
    parser.add_argument("--user", metavar="NAME",
                        help="user column for a system crontab (default: you)")
    parser.set_defaults(handler=cmd_install_cron)


def cmd_install_cron(args: argparse.Namespace, config: CollectorConfig) -> int:
    path = Path(args.crontab_file) if args.crontab_file else None
    user = args.user or (_current_user() if path and _is_system_crontab(path) else None)
    try:
        lines = cron_lines(args, user)
        current = _read_file(path) if path else _read_crontab(args.dry_run)
        updated = replace_block(current, lines)
        _warn_token_stays_here(config, updated)
        if args.dry_run:
            print(updated, end="")
            return 0
        where = str(path) if path else "your crontab"
        if updated == current:
            print(f"{where} already has these hubcollect lines: unchanged")
            return 0
        if path:
            _write_file(path, updated)
        else:
            _write_crontab(updated)
    except CronError as exc:
        return usage_error(f"install-cron: {exc}")
    jobs = "size monitor" if args.no_watchdog else "watchdog and size monitor"
    print(f"{where}: hubcollect {jobs} every 5 minutes")
    return 0


# --- the lines ----------------------------------------------------------------------------------


def cron_lines(args: argparse.Namespace, user: str | None) -> list[str]:
    """The lines between the markers, every path absolute. Raises CronError for a value that
    would not stay on its line."""
    prefix = [f"cd {shlex.quote(_one_line('the current directory', os.getcwd()))}", "&&",
              f"COLLECTOR_PYTHON={shlex.quote(_one_line('the interpreter', sys.executable))}"]
    config_path = resolve_config_path(args.config)
    if config_path is not None:
        config = _one_line("the config path", str(config_path.absolute()))
        prefix.append(f"{CONFIG_ENV}={shlex.quote(config)}")
    _one_line("the scripts directory", str(SCRIPTS_DIR))
    columns = f"{SCHEDULE} {_one_line('--user', user)}" if user else SCHEDULE
    watchdog = ["--min-workers", str(args.min_workers)] if args.min_workers else []
    size = ["--every", args.every] + (["--target", args.target] if args.target else [])
    jobs = [] if args.no_watchdog else [("watchdog.sh", watchdog)]
    jobs.append(("size_monitor.sh", size))
    lines = [BEGIN, f"# written by '{PROG} install-cron'; run it again to change these lines"]
    for script, options in jobs:
        options = [_one_line("the option value", value) for value in options]
        command = " ".join([*prefix, shlex.quote(str(SCRIPTS_DIR / script)),
                            *map(shlex.quote, options)])
        lines.append(f"{columns} {_cron_escape(command)}")
    lines.append(END)
    return lines


def _one_line(what: str, value: str) -> str:
    """``value``, refused if it holds a control character: cron ends an entry at a newline, so a
    directory named ``x\\n* * * * * cmd`` would add a job of its own (quoting cannot help)."""
    bad = next((char for char in value if unicodedata.category(char) == "Cc"), None)
    if bad is not None:
        raise CronError(f"{what} {value!r} contains the control character {bad!r}, which "
                        "cannot go into a crontab: use a path or name without control characters")
    return value


def _cron_escape(command: str) -> str:
    # In a crontab an unescaped % ends the command (the rest becomes its stdin).
    return command.replace("%", "\\%")


def replace_block(crontab: str, lines: list[str]) -> str:
    """``crontab`` with the marked block replaced by ``lines``, or appended when absent."""
    existing = crontab.splitlines()
    starts = [i for i, line in enumerate(existing) if line.strip() == BEGIN]
    ends = [i for i, line in enumerate(existing) if line.strip() == END]
    if len(starts) > 1 or len(ends) > 1 or len(starts) != len(ends) or (
            starts and ends[0] < starts[0]):
        raise CronError(f"the crontab's '{BEGIN}' … '{END}' block is damaged; fix it by hand")
    if starts:
        result = existing[:starts[0]] + lines + existing[ends[0] + 1:]
    else:
        gap = [""] if existing and existing[-1].strip() else []
        result = existing + gap + lines
    return "\n".join(result) + "\n"  # cron ignores a last line without its newline


# --- where the crontab lives --------------------------------------------------------------------


def _is_system_crontab(path: Path) -> bool:
    absolute = path.absolute()
    return absolute == Path("/etc/crontab") or absolute.parent == Path("/etc/cron.d")


def _current_user() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def _read_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise CronError(f"cannot read {path}: {exc}") from None


def _write_file(path: Path, text: str) -> None:
    """Atomic replace, keeping the file's mode (cron skips group/world-writable cron.d files)."""
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644 if _is_system_crontab(path) else 0o600
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.chmod(tmp, mode)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CronError(f"cannot write {path}: {exc.strerror}") from None


def _crontab(*args: str, text: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["crontab", *args], input=text, capture_output=True, text=True,
                              timeout=30)
    except FileNotFoundError:
        raise CronError("no crontab command here: install cron, or use --crontab-file PATH "
                        "(or the systemd unit in scripts/hubcollect.service)") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CronError(f"crontab failed: {exc}") from None


def _warn_token_stays_here(config: CollectorConfig, crontab: str) -> None:
    """cron starts its jobs with a bare environment: a token in this shell never reaches a
    runner the watchdog has to start again, which would then run anonymously."""
    name = config.github.token_env
    if config.github.token_file is not None:
        return  # every process reads it from there, cron's jobs included
    if os.environ.get(name) and not re.search(rf"^\s*{re.escape(name)}\s*=", crontab, re.M):
        print(f"{PROG}: warning: ${name} is set in this shell but cron's jobs do not get it: a "
              f"runner the watchdog restarts would run anonymously; put it in a file (chmod "
              f"600) named by github.token_file in collector.yaml, or add a line {name}=… at "
              "the top of the crontab (crontab -e)", file=sys.stderr)


def _read_crontab(dry_run: bool = False) -> str:
    if dry_run and shutil.which("crontab") is None:
        return ""  # no crontab to read: show what would be installed
    done = _crontab("-l")
    if done.returncode == 0:
        return done.stdout
    if "no crontab" in done.stderr.lower():
        return ""
    raise CronError(f"crontab -l failed: {_first_line(done.stderr)}")


def _write_crontab(text: str) -> None:
    done = _crontab("-", text=text)
    if done.returncode != 0:
        raise CronError(f"crontab - failed: {_first_line(done.stderr)}")


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "no message"
