"""``python -m runner status``: what the runner's ``state/status.json`` and each worker's
``state/workers/*.json`` say, joined, so it is readable even when the runner is gone."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from runner.core import datasize
from runner.core.budgetview import budget_rows, render_budget
from runner.core.growth import outlook
from runner.core.health import ShardHealth, shard_health
from runner.core.ledgerview import recent_ledger, share_lines
from runner.core.pidfile import running_pid
from runner.core.runnerstate import (
    ENDED,
    KEPT_GOING,
    UP,
    ShownState,
    SlotRecord,
    SlotStatus,
    StatusFile,
    read_status,
)
from scraper.budget.limits import ANONYMOUS, identity_for_token, identity_label
from scraper.config.collector import CollectorConfig
from scraper.slicing.searchround import incomplete_note
from scraper.utils.layout import DataLayout
from scraper.utils.quarantine import count_quarantined
from scraper.utils.statefile import WorkerRecord, read_worker
from scraper.utils.units import format_duration, format_size
from scraper.utils.urlmask import is_masked

WIDTH = 80
"""Columns of every line ``status`` prints: an ssh session on a phone."""

def worker_row(slot: SlotRecord, live: WorkerRecord | None, runner_alive: bool,
               now: float, health: ShardHealth) -> dict[str, Any]:
    """One row of ``status --json``'s ``workers``: the runner's slot joined with its worker's
    own file, when that file is this round's; ``health`` is the shard's verdict."""
    row = asdict(slot)
    del row["next_round_monotonic"]
    row.pop("round_started_monotonic", None)
    this_round = live if live is not None and live.is_round_of(slot.round_pid) else None
    running = slot.state == SlotStatus.RUNNING
    row["items_round"] = this_round.items if this_round else 0
    # The worker's own counter outlives runner restarts; the slot's counts this runner only.
    row["items_total"] = max(live.items_total if live else 0,
                             slot.items_total + (row["items_round"] if running else 0))
    row["health"] = health.verdict
    row["health_reason"] = health.reason or None
    row["first_error"] = live.first_error if live else None
    row["pages"] = this_round.pages if this_round else 0
    row["responses"] = dict(this_round.responses) if this_round else {}
    row["last_ok_at"] = live.last_ok_at if live else None
    row["lists"] = dict(live.lists) if live else {}
    row["unusual"] = live.unusual if live else None
    row["uss_mb"] = live.uss_mb if running and live is not None else None
    row["last_error"] = slot.last_error or (live.last_error if live else None)
    row["progress"] = progress_note(this_round.stats) if this_round else None
    if running and this_round and this_round.stats.get("distributed/redis_up") == 0:
        row["state"] = ShownState.REDIS_WAIT
    next_at = slot.next_round_at
    row["next_round_in"] = max(0.0, next_at - now) if next_at else None
    if not runner_alive and row["state"] in KEPT_GOING:
        row["state"] = ShownState.DOWN
    return row


def collect_status(layout: DataLayout, redis_url: str | None = None,
                   config: CollectorConfig | None = None, *, data_bytes: int | None = None,
                   cluster: bool = True) -> dict[str, Any]:
    """The ``status --json`` object: ``{"runner": …, "workers": […], "totals": …}``, plus
    ``"cluster"`` in the distributed mode (``redis_url``, else the runner's). ``config`` (the
    current one) judges health and picks the budget rows of the identity in use. The runner
    passes ``data_bytes`` (its last sample, not a walk) and ``cluster=False`` (no Redis round
    trip) for the metrics it writes every status write."""
    config = config or CollectorConfig(data_dir=layout.root)
    recorded = read_status(layout.status_file)
    status = recorded or StatusFile()
    runner: dict[str, Any] = asdict(status.runner) if recorded else {}
    runner.pop("updated_monotonic", None)
    pid = running_pid(layout.runner_pidfile)
    runner["alive"] = pid is not None
    runner["pid"] = pid if pid is not None else runner.get("pid")
    now, mono = time.time(), time.monotonic()
    workers = []
    for slot in status.workers:
        live = read_worker(layout.worker_state_of(slot.slug))
        verdict = shard_health(slot, live, config.health,
                               config.round_interval_of(slot.spider), mono)
        workers.append(worker_row(slot, live, runner["alive"], now, verdict))
        workers[-1]["round_interval"] = config.round_interval_of(slot.spider)
    # A --once run that ended by itself is finished, not down.
    runner["finished"] = bool(recorded and not runner["alive"] and status.runner.once
                              and status.workers and all(
                                  slot.state in ENDED for slot in status.workers))
    up = sum(1 for w in workers if w["state"] in UP)
    if data_bytes is None:
        data_bytes = datasize.data_bytes(layout)  # no walk of items/
    disk = outlook(layout, data_bytes)
    others = other_shards(layout, {w["slug"] for w in workers})
    totals = {
        "items": sum(w["items_total"] for w in workers) + sum(others.values()),
        # Shards on disk that this plan does not run (an earlier --workers): slug → items.
        "items_other_plans": others,
        "data_bytes": disk.data_bytes,
        "disk_free_bytes": disk.free_bytes,
        "growth_per_day_bytes": None if disk.per_day is None else int(disk.per_day),
        "disk_days_left": None if disk.days_left is None else round(disk.days_left, 1),
        "workers_up": up,
        "workers_planned": status.runner.planned if recorded else len(workers),
        # Unreadable item segments the catalog or the drain set aside (scraper/utils/quarantine).
        "segments_quarantined": count_quarantined(layout),
    }
    # The runner's own identity, whatever token this shell has; the config's when it never ran.
    identity = (recorded.runner.github_identity if recorded and recorded.runner.github_identity
                else identity_label(identity_for_token(
                    config.github.token.reveal() if config.github.token else None)))
    from runner.catalog.sitefidelity import catalog_fidelity

    result: dict[str, Any] = {"runner": runner, "workers": workers, "totals": totals,
              "budget": in_use(budget_rows(layout), identity),
              "docs_fidelity": [asdict(site) for site in catalog_fidelity(layout, config)]}
    result["ledger"] = recent_ledger(layout)
    redis_url = redis_url or status.runner.redis_url
    if redis_url and cluster:
        from scraper.cluster.registry import cluster_status

        if is_masked(redis_url):
            # status.json keeps the runner's URL without its password: it cannot connect.
            result["cluster"] = {"url": redis_url, "reachable": False,
                                 "error": "the runner's Redis needs a password: pass "
                                          "--redis-url or set redis_url"}
        else:
            result["cluster"] = cluster_status(redis_url)
        if result["cluster"].get("reachable"):  # the budget in effect is the cluster's
            from runner.core.budgetview import rows_from_buckets

            result["budget"] = in_use(rows_from_buckets(result["cluster"]["budget"],
                                                        time.time()), identity)
        else:  # the budget lives in that Redis: this machine's file says nothing about it
            result["budget"] = []
            result["budget_unknown"] = (f"unknown: Redis {result['cluster']['url']} is not "
                                        "reachable")
    return result


TIME_KEY_SUFFIXES = ("_at", "_since")
"""Keys of ``status --json`` that hold a moment (epoch seconds inside the runner's files)."""


def iso_times(value: Any, key: str = "") -> Any:
    """``value`` with every moment as ISO-8601 UTC (``2026-12-01T10:07:26Z``), as items and
    the catalog write them; durations (``resets_in``, ``next_round_in``) stay seconds."""
    if isinstance(value, dict):
        return {k: iso_times(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [iso_times(v, key) for v in value]
    if (key.endswith(TIME_KEY_SUFFIXES) and isinstance(value, int | float)
            and not isinstance(value, bool)):
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(value))
    return value


def other_shards(layout: DataLayout, planned: set[str]) -> dict[str, int]:
    """Items of each shard with a state file on disk that ``planned`` (slugs) does not run."""
    directory = layout.workers_state_dir
    found = {}
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else ():
        if path.stem in planned:
            continue
        record = read_worker(path)
        if record is not None and record.items_total:
            found[path.stem] = record.items_total
    return found


def progress_note(stats: dict[str, Any]) -> str | None:
    """How far a worker's round has got, where its spider says (search: ``slice 12/31``)."""
    total = stats.get("search/slices_total")
    note = incomplete_note(stats)
    progress = f"slice {stats.get('search/slice_index', 0)}/{total}" if total else None
    return ", ".join(filter(None, (progress, note))) or None


def in_use(rows: list[dict[str, Any]], identity: str) -> list[dict[str, Any]]:
    """The budget rows of the identity the current config uses: a token no longer configured
    says nothing about what the collector can do now. (The web pages' budget is a host's.)"""
    def api_identity(label: str) -> bool:
        return label == ANONYMOUS or label.startswith("token …")

    return [row for row in rows if row["identity"] == identity
            or not api_identity(row["identity"])]


def fit(line: str, width: int = WIDTH) -> str:
    """``line`` cut at ``width`` columns, its end marked: a phone's terminal wraps nothing."""
    return line if len(line) <= width else line[:width - 1] + "…"


def render_disk(totals: dict[str, Any]) -> str:
    free = totals.get("disk_free_bytes")
    per_day = totals.get("growth_per_day_bytes")
    days = totals.get("disk_days_left")
    free_text = f"{format_size(free)} free" if free is not None else "free space unknown"
    if per_day is None:
        return f"disk: {free_text}, growth per day not known yet (needs an hour of samples)"
    left = f", {days:,.0f} days left" if days is not None else ", not growing"
    sign = "+" if per_day >= 0 else "-"
    return f"disk: {free_text}, data {sign}{format_size(abs(per_day))}/day{left}"


def render_status(status: dict[str, Any]) -> str:
    """A table that fits a phone's ssh session (80 columns): one short row per worker, its
    last error, if any, on an indented line below it."""
    runner, totals = status["runner"], status["totals"]
    lines = []
    if runner.get("alive"):
        updated = time.time() - (runner.get("updated_at") or 0)
        up = format_duration(time.time() - runner["started_at"])
        lines.append(f"runner pid {runner['pid']} up {up}, status {format_duration(updated)} "
                     "old")
        lines.append(runner.get("plan", ""))
        if runner.get("concurrency") and runner.get("concurrency_range"):
            low, high = runner["concurrency_range"]
            cpu = runner.get("cpu_ratio")
            cpu_text = f", CPU {cpu:.0%}" if cpu is not None else ""
            lines.append(f"crawling at once: up to {runner['concurrency']} (autoscaled "
                         f"{low}–{high}{cpu_text})")
    elif runner.get("finished"):
        ended = format_duration(time.time() - (runner.get("updated_at") or 0))
        lines.append(f"runner finished its --once run {ended} ago (pid {runner.get('pid')})")
        lines.append(runner["plan"])
    elif runner.get("plan"):
        lines.append(f"runner NOT RUNNING (last pid {runner.get('pid')})")
        lines.append(runner["plan"])
    else:
        lines.append("runner has never run with this data_dir")
    if runner.get("alive") and runner.get("disk_full_since"):
        since = format_duration(time.time() - runner["disk_full_since"])
        lines.append(f"DISK FULL for {since}: no workers start until space is freed under "
                     "data_dir")
    header = f"{'worker':<14} {'state':<10} {'health':<7} {'pid':>7} {'rnd':>4} " \
             f"{'items':>11} {'pages':>6} {'MB':>4} {'next':>5}"
    redis = runner.get("redis") or {}
    if runner.get("alive") and redis.get("state") == "unreachable":
        lines.append(f"REDIS UNREACHABLE for {format_duration(time.time() - redis['down_since'])} "
                     f"({redis['url']}): workers pause their shared work until it is back")
    lines.append(header)
    for w in status["workers"]:
        items = f"{w['items_round']}/{w['items_total']}"
        mb = f"{w['uss_mb']:.0f}" if w.get("uss_mb") else "-"
        name = f"{w['spider']} {w['shard']}"
        lines.append(f"{name:<14} {w['state']:<10} {w.get('health', '-'):<7} "
                     f"{w.get('pid') or '-':>7} {w['rounds']:>4} {items:>11} {w['pages']:>6} "
                     f"{mb:>4} {format_duration(w.get('next_round_in')):>5}")
        # Under the row: how far the round has got, and why it is unhealthy or what failed last.
        error = w.get("health_reason") or w.get("first_error") or w.get("last_error")
        note = " ".join(filter(None, (w.get("progress"), " ".join(str(error or "").split()))))
        if note:
            lines.append(f"    {note}")
        if w.get("unusual"):
            lines.append(f"    unusual round: {w['unusual']}")
    lines.append(f"total: {totals['items']} items, data {format_size(totals['data_bytes'])}, "
                 f"workers up {totals['workers_up']}/{totals['workers_planned']}")
    if others := totals.get("items_other_plans"):
        lines.append(f"  of them {sum(others.values())} from shards this plan does not run: "
                     + ", ".join(others))
    lines.append(fit(render_disk(totals)))
    lines += share_lines(status.get("ledger") or {})
    if quarantined := totals.get("segments_quarantined"):
        lines.append(f"QUARANTINED: {quarantined} unreadable segments in data_dir/quarantine/ "
                     "(see why.log)")
    if status.get("budget_unknown"):
        lines.append(f"github budget: {status['budget_unknown']}")
    else:
        lines += render_budget(status.get("budget") or [])
    if status.get("docs_fidelity"):
        from runner.catalog.sitefidelity import SiteFidelity

        lines.append("docs fidelity (catalog):")
        for site in status["docs_fidelity"]:  # the site on a line of its own: URLs are long
            totals = SiteFidelity(**site)
            lines += [f"  {site['site']}", *(f"    {form}" for form in totals.forms()),
                      f"    {totals.pages_line()}"]
    if "cluster" in status:
        from runner.status.clusterview import render_cluster

        lines += render_cluster(status["cluster"])
    return "\n".join(fit(line) for line in lines)
