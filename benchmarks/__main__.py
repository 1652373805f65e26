"""``python -m benchmarks [--scale tiny|full] [NAME…]``: memory, throughput, budget and hostile,
then every table.

Each benchmark writes its own JSON under ``benchmarks/results/``; this command runs them one
after the other (never together: they would measure each other) and prints all the tables at
the end. ``--only memory,throughput`` picks some of them.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import inspect
import io
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

BENCHMARKS = ("memory", "throughput", "budget", "hostile")


def _budget_main() -> Callable[..., Any] | None:
    if importlib.util.find_spec("benchmarks.budget") is None:
        return None
    module = importlib.import_module("benchmarks.budget")
    return getattr(module, "main", None)


class _Tee(io.TextIOBase):
    """Writes through to the terminal and keeps a copy (the budget benchmark's tables)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.copy = io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()


def _call(main: Callable[..., Any], argv: list[str]) -> int:
    """``main(argv)`` when it takes arguments, else ``main()`` with ``sys.argv`` set; a main
    that refuses ``--scale`` (argparse exit 2) is called again without it."""
    try:
        takes_argv = bool(inspect.signature(main).parameters)
    except (TypeError, ValueError):
        takes_argv = True
    for args in (argv, []):
        saved = sys.argv
        sys.argv = [saved[0], *args]
        try:
            return int((main(args) if takes_argv else main()) or 0)
        except SystemExit as exc:
            if exc.code != 2 or not args:
                return exc.code if isinstance(exc.code, int) else 1
            print(f"(budget refused {' '.join(args)}: running it with its defaults)")
        finally:
            sys.argv = saved
    return 1


def _tables(name: str, scale: str, captured: str) -> str:
    """The final tables of one benchmark: re-rendered from its JSON when it has a ``render``,
    else the end of what it printed."""
    import json

    from benchmarks.common import default_results

    module = importlib.import_module(f"benchmarks.{name}")
    render = getattr(module, "render", None)
    path = default_results(name, scale)
    if render is not None and path.exists():
        try:
            return str(render(json.loads(path.read_text(encoding="utf-8"))))
        except Exception as exc:  # a budget.py whose JSON and render disagree: show its output
            return f"({name}: cannot re-render {path}: {exc})\n" + _tail(captured)
    return _tail(captured)


def _tail(captured: str, lines: int = 60) -> str:
    return "\n".join(captured.strip().splitlines()[-lines:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=("tiny", "full"), default="full")
    parser.add_argument("--only", default=",".join(BENCHMARKS),
                        help=f"comma-separated, from: {', '.join(BENCHMARKS)}")
    parser.add_argument("names", nargs="*", help="the same as --only: python -m benchmarks hostile")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    if args.names:
        chosen = args.names
    unknown = sorted(set(chosen) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(BENCHMARKS)}")
    status = 0
    done: list[tuple[str, str, str]] = []  # (name, how it ended, what it printed)
    for name in chosen:
        started = time.time()
        print(f"=== {name} ({args.scale}) ===", flush=True)
        tee = _Tee(sys.stdout)
        with contextlib.redirect_stdout(tee):
            if name == "budget":
                budget = _budget_main()
                if budget is None:
                    print("budget: skipped: benchmarks/budget.py (or its main()) is not there")
                    continue
                code = _call(budget, ["--scale", args.scale])
            else:
                module = importlib.import_module(f"benchmarks.{name}")
                code = int(module.main(["--scale", args.scale]) or 0)
        done.append((name, f"exit {code}, {time.time() - started:.0f} s", tee.copy.getvalue()))
        status = status or code
    print("\n=== all tables ===")
    for name, how, captured in done:
        print(f"\n--- {name} ({how}) ---")
        print(_tables(name, args.scale, captured))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
