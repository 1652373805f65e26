"""Measure a proposed runner change before anyone makes it: the runner, with the change applied
in this process only.

    python -m benchmarks.proposals --preload-components -- --workers 20 --spiders docs ...

``--preload-components``: besides ``runner.supervisor.PRELOAD_MODULES``, the parent imports
every Scrapy component the project's settings name — all ``*_BASE`` and project middlewares,
extensions, pipelines and download handlers, disabled ones included (Scrapy's
``get_component_priority_dict_with_base`` imports every key to normalise it, so a worker
imports them anyway: ``scrapy.extensions.remote_control`` brings aiohttp, ``telnet`` brings
twisted.conch, ``downloadermiddlewares.cookies`` brings tldextract, requests and urllib3) and
every class-path setting (scheduler, queues, dupefilter, stats, log formatter…). Measured here
without it, a forked worker imports ~275 modules after the fork, in every round.

Adopted: ``runner.preload`` now does this in every runner, so the flag measures nothing new;
it stays as the place to try the next proposal.
"""

from __future__ import annotations

import argparse
import sys

from runner.preload import component_modules
from runner.preload import import_all as importable


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ours, rest = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv \
        else ([], argv)
    parser = argparse.ArgumentParser(prog="python -m benchmarks.proposals")
    parser.add_argument("--preload-components", action="store_true")
    args = parser.parse_args(ours)
    import runner.supervisor as supervisor

    if args.preload_components:
        extra = [m for m in component_modules() if m not in supervisor.PRELOAD_MODULES]
        supervisor.PRELOAD_MODULES = (*supervisor.PRELOAD_MODULES, *importable(extra))
        if "twisted.internet.reactor" in sys.modules:  # preload() would refuse to fork
            raise SystemExit("a component module installed a reactor: cannot preload it")
    from runner.cli import main as runner_main

    sys.argv = [sys.argv[0], *rest]
    return runner_main(rest)


if __name__ == "__main__":
    raise SystemExit(main())
