"""The counters ``status`` shows, as OpenMetrics text for a monitoring system.

The runner writes ``{metrics_dir}/hubcollect.prom`` (default ``{data_dir}/state/metrics/``) at
every status write, for node_exporter's textfile collector
(``--collector.textfile.directory``); ``python -m runner metrics`` prints the same text. Every
family is a gauge (a value read now, valid in both OpenMetrics and Prometheus' text format);
the text ends with ``# EOF`` as OpenMetrics requires. No server is started.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from scraper.config.collector import CollectorConfig
from scraper.utils.diskspace import is_disk_full
from scraper.utils.layout import DataLayout
from scraper.utils.statefile import SHARED_DIR_MODE, private_dirs, write_atomic

logger = logging.getLogger(__name__)

TEXTFILE_NAME = "hubcollect.prom"
PREFIX = "hubcollect_"
CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

Sample = tuple[dict[str, str], float]


def metrics_dir(layout: DataLayout, config: CollectorConfig) -> Path:
    return config.metrics_dir if config.metrics_dir is not None else layout.state_dir / "metrics"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _family(name: str, help_text: str, samples: Iterable[Sample]) -> list[str]:
    full = PREFIX + name
    lines = [f"# TYPE {full} gauge", f"# HELP {full} {help_text}"]
    for labels, value in samples:
        label_text = ",".join(f'{key}="{_escape(str(val))}"' for key, val in labels.items())
        number = repr(float(value)) if isinstance(value, float) else str(int(value))
        lines.append(f"{full}{{{label_text}}} {number}" if label_text else f"{full} {number}")
    return lines


def render_metrics(status: dict[str, Any]) -> str:
    """OpenMetrics text from a ``status --json`` object
    (:func:`runner.status.render.collect_status`)."""
    runner, totals, workers = status["runner"], status["totals"], status["workers"]

    def shards(value: Callable[[dict[str, Any]], Any]) -> list[Sample]:
        rows = []
        for w in workers:
            number = value(w)
            if number is not None:
                rows.append(({"spider": w["spider"], "shard": w["shard"]}, number))
        return rows

    answers = [({"spider": w["spider"], "shard": w["shard"], "class": cls}, n)
               for w in workers for cls, n in sorted((w.get("responses") or {}).items())]
    health = [({"spider": w["spider"], "shard": w["shard"], "verdict": w.get("health") or "-"},
               1) for w in workers]
    budget = status.get("budget") or []

    def budget_samples(key: str) -> list[Sample]:
        return [({"resource": row["resource"], "identity": row["identity"]}, row[key])
                for row in budget if row.get(key) is not None]

    disk = [("data_bytes", "Bytes on disk under data_dir.", totals.get("data_bytes")),
            ("disk_free_bytes", "Free bytes on data_dir's disk.", totals.get("disk_free_bytes")),
            ("data_growth_bytes_per_day", "data_dir's growth per day over the last week.",
             totals.get("growth_per_day_bytes")),
            ("disk_days_left", "Days until data_dir's disk is full at that growth.",
             totals.get("disk_days_left")),
            ("segments_quarantined", "Unreadable item segments set aside in "
             "data_dir/quarantine/.", totals.get("segments_quarantined"))]
    lines = _family("runner_up", "1 while a runner is running on this data_dir.",
                    [({}, 1 if runner.get("alive") else 0)])
    lines += _family("shard_rounds", "Rounds this runner has finished, per spider-shard.",
                     shards(lambda w: w["rounds"]))
    lines += _family("shard_pages", "Pages answered in the current or last round.",
                     shards(lambda w: w["pages"]))
    lines += _family("shard_items", "Items stored by the spider-shard, all rounds.",
                     shards(lambda w: w["items_total"]))
    lines += _family("shard_answers", "Answers of the current or last round by class "
                     "(2xx..5xx, failed: no answer).", answers)
    lines += _family("shard_last_success_timestamp_seconds", "When the spider-shard last got "
                     "an answer carrying data (Unix time).", shards(lambda w: w.get("last_ok_at")))
    lines += _family("shard_round_items", "Items stored in the current or last round.",
                     shards(lambda w: w.get("items_round")))
    lines += _family("shard_unusual", "1 while the spider-shard's last round is unusual against "
                     "its last days (ROUND_UNUSUAL_RATIO).",
                     shards(lambda w: 1 if w.get("unusual") else 0))
    lines += freshness(workers, time.time())
    lines += _family("shard_health", "1 for the spider-shard's health verdict "
                     "(ok, new, no-data, failing, empty, hung).", health)
    lines += _family("budget_limit", "GitHub budget: requests per window.",
                     budget_samples("limit"))
    lines += _family("budget_remaining", "GitHub budget: requests left in the window.",
                     budget_samples("remaining"))
    for name, help_text, value in disk:
        lines += _family(name, help_text, [({}, value)] if value is not None else [])
    lines += ledger_families(status.get("ledger") or {})
    return "\n".join(lines) + "\n# EOF\n"


def freshness(workers: list[dict[str, Any]], now: float) -> list[str]:
    """Per spider: its round interval and the age of its newest data; per list (trending page,
    search query, docs site): the age of the list's newest data. The newest of its shards."""
    interval: dict[str, float] = {}
    newest: dict[str, float] = {}
    lists: dict[tuple[str, str], float] = {}
    for w in workers:
        spider = w["spider"]
        if w.get("round_interval") is not None:
            interval[spider] = w["round_interval"]
        if w.get("last_ok_at") is not None:
            newest[spider] = max(newest.get(spider, 0.0), w["last_ok_at"])
        for key, entry in (w.get("lists") or {}).items():
            last = entry.get("last_data_at") if isinstance(entry, dict) else None
            if isinstance(last, int | float) and not isinstance(last, bool):
                lists[spider, key] = max(lists.get((spider, key), 0.0), float(last))
    lines = _family("round_interval_seconds", "How often the spider's rounds start "
                    "(round_interval).", [({"spider": k}, v) for k, v in interval.items()])
    lines += _family("data_age_seconds", "Seconds since the spider last got an answer carrying "
                     "data (a 304, unchanged, counts).",
                     [({"spider": k}, round(max(0.0, now - v), 1)) for k, v in newest.items()])
    lines += _family("list_age_seconds", "Seconds since the list (trending page, search query, "
                     "docs site) last gave data.",
                     [({"spider": spider, "list": key}, round(max(0.0, now - last), 1))
                      for (spider, key), last in sorted(lists.items())])
    return lines


def ledger_families(ledger: dict[str, dict[str, Any]]) -> list[str]:
    """The gap ledger's last 24 hours (:mod:`runner.core.ledgerview`); the names are the alert
    rules' (docs/operations.md)."""
    counts = [({"spider": spider, "outcome": outcome}, n) for spider, row in ledger.items()
              for outcome, n in row["outcomes"].items()]
    ratios = [({"spider": spider}, 1.0 - row["yielded_share"]) for spider, row in ledger.items()
              if row["yielded_share"] is not None]
    return (_family("scheduled_fetches", "Scheduled fetches of the last 24 hours' rounds by "
                    "outcome (data, not_modified, failed, skipped, silent).", counts)
            + _family("gap_ratio", "Share of the last 24 hours' scheduled fetches that "
                      "yielded no data (failed, skipped or silent), 0..1.", ratios))


def write_textfile(directory: Path, text: str, group: int | None = None) -> Path:
    """Atomically, so the collector never reads half a file; private (0600) like the rest of
    state/, or ``group``'s to read (0640). The directory, if this makes it, is 0700, or 0750
    and ``group``'s; a metrics_dir that exists keeps its owner's mode."""
    if group is not None and not directory.is_dir():
        private_dirs(directory.parent)
        with contextlib.suppress(FileExistsError):  # made meanwhile: left as it is
            os.mkdir(directory, SHARED_DIR_MODE)
            os.chown(directory, -1, group)
            os.chmod(directory, SHARED_DIR_MODE)  # the umask may have taken bits off
    private_dirs(directory)
    path = directory / TEXTFILE_NAME
    write_atomic(path, text, group)
    return path


class MetricsWriter:
    """The runner's part, at every status write: the size sample (at most every ten minutes,
    no walk of items/) and the textfile, from files only (no Redis round trip, no walk). A
    directory it cannot write is said once, not every two seconds."""

    def __init__(self, layout: DataLayout, config: CollectorConfig) -> None:
        self.layout, self.config = layout, config
        self.failing = False

    def write(self) -> None:
        from runner.core.growth import read_samples, record_sample
        from runner.status.render import collect_status

        try:
            record_sample(self.layout)
            samples = read_samples(self.layout)
            status = collect_status(self.layout, config=self.config, cluster=False,
                                    data_bytes=samples[-1][1] if samples else 0)
            write_textfile(metrics_dir(self.layout, self.config), render_metrics(status),
                           self.config.metrics_group)
        except OSError as exc:
            if not self.failing:
                # A full disk has its own line (the runner's disk gate): this one, the log's.
                logger.log(logging.INFO if is_disk_full(exc) else logging.WARNING,
                           "cannot write metrics: %s", exc)
            self.failing = True
        else:
            self.failing = False


# --- the command ----------------------------------------------------------------------------------


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = ("Print the status counters as OpenMetrics text (what the runner "
                          "writes for node_exporter's textfile collector).")
    add_config_option(parser)
    parser.set_defaults(handler=cmd_metrics)


def cmd_metrics(args: argparse.Namespace, config: CollectorConfig) -> int:
    from runner.status.render import collect_status

    status = collect_status(DataLayout(config.data_dir), config.redis_url, config)
    print(render_metrics(status), end="")
    return 0
