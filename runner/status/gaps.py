"""``python -m runner gaps [--since DATE] [--json]``: which scheduled fetches yielded nothing.

One row per trending list, search query or docs site and reason: rounds in a row that failed
or were skipped or silent for the same cause are one row, with when it was first and last seen
and in how many rounds (:func:`scraper.utils.ledger.gap_spans`). Exit 0; nothing printed when
nothing is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import date, datetime

from scraper.config.collector import CollectorConfig
from scraper.utils.layout import DataLayout
from scraper.utils.ledger import Span, gap_spans, scheduled_fetches, since_hours

DEFAULT_DAYS = 7


def since_date(value: str) -> str:
    """``YYYY-MM-DD`` (from that day's start, UTC) or ``YYYY-MM-DDTHH:MM:SSZ``, as the ledger
    writes times."""
    try:
        if len(value) == 10:
            return f"{date.fromisoformat(value).isoformat()}T00:00:00.000Z"
        if len(value) == 20 and value.endswith("Z"):
            datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
            return f"{value[:-1]}.000Z"
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"{value!r} is not a date: give YYYY-MM-DD (UTC) or "
                                     "YYYY-MM-DDTHH:MM:SSZ")


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = ("List the scheduled fetches that yielded nothing (failed, skipped, "
                          "silent): per trending list, search query and docs site, with the "
                          "cause and the rounds it lasted.")
    add_config_option(parser)
    parser.add_argument("--since", type=since_date, metavar="DATE",
                        help=f"rounds from DATE on (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, UTC); "
                             f"default: the last {DEFAULT_DAYS} days")
    parser.add_argument("--json", action="store_true", help="one JSON list of the rows")
    parser.set_defaults(handler=cmd_gaps)


def cmd_gaps(args: argparse.Namespace, config: CollectorConfig) -> int:
    since = args.since or since_hours(DEFAULT_DAYS * 24)
    if config.redis_url:  # the cluster's events, from every box, copied here first
        from runner.catalog.clusterledger import merge_or_say

        merge_or_say(config.redis_url, DataLayout(config.data_dir).state_dir,
                     lambda line: print(line, file=sys.stderr))
    spans = gap_spans(scheduled_fetches(DataLayout(config.data_dir).state_dir, since))
    if args.json:
        print(json.dumps([span.as_dict() for span in spans], indent=1))
    elif spans:
        print("\n".join(render_span(span) for span in spans))
    return 0


def render_span(span: Span) -> str:
    """``docs site http://…/: failed (refused), 3 rounds 2026-12-07 20:01:02 – 20:09:40 UTC:
    127.0.0.1:9: Connection was refused …``"""
    first, last = _shown(span.first_seen), _shown(span.last_seen)
    if last[:10] == first[:10]:
        last = last[11:]
    when = first if span.rounds == 1 else f"{first} – {last}"
    cause = f" ({span.cause})" if span.cause else ""
    rounds = "1 round" if span.rounds == 1 else f"{span.rounds} rounds"
    detail = f": {span.detail}" if span.detail else ""
    return f"{span.spider} {span.kind} {span.key}: {span.outcome}{cause}, {rounds} {when} UTC" \
           f"{detail}"


def _shown(stamp: str) -> str:
    try:
        parsed = time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return stamp
    return time.strftime("%Y-%m-%d %H:%M:%S", parsed)
