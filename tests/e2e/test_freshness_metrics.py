"""Freshness as metrics, and the shipped alert rules and dashboard over them: a real ``--once``
round against the fake GitHub and docs sites, then ``python -m runner metrics``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from tests.support.collector import Collector
from tests.support.paths import REPO_ROOT

MONITORING = REPO_ROOT / "scripts" / "monitoring"
QUOTED_QUERY = 'few "a\\b"'
"""A search query whose label needs the text format's escapes (``\\"`` and ``\\\\``)."""
METRIC = re.compile(r"\bhubcollect_[a-z_]+\b")
SAMPLE = re.compile(r'^(hubcollect_[a-z_]+)(\{(.*)\})? (-?[0-9.e+]+)$')


def samples(text: str) -> dict[str, list[tuple[str, float]]]:
    """metric name → [(label text, value)] of every sample line."""
    found: dict[str, list[tuple[str, float]]] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, line
        found.setdefault(match[1], []).append((match[3] or "", float(match[4])))
    return found


def used_in_rules(path: Path) -> set[str]:
    rules = yaml.safe_load(path.read_text())
    names = set()
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert {"alert", "expr", "for", "labels", "annotations"} <= rule.keys(), rule
            names |= set(METRIC.findall(rule["expr"]))
    return names


def used_in_dashboard(path: Path) -> set[str]:
    dashboard = json.loads(path.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return {name for expr in exprs for name in METRIC.findall(expr)}


def test_a_round_gives_ages_per_spider_and_list_and_the_rules_use_only_printed_metrics(
        collector: Collector, fake_github: Any, fake_docs: Any) -> None:
    site = f"{fake_docs.url()}/site0/"
    collector.configure(github=fake_github, docs_urls=[site], spiders={
        "trending": {"languages": [""], "periods": ["daily"]},
        "search": {"queries": ["few", QUOTED_QUERY], "per_page": 50},
        "docs": {"max_pages_per_site": 5}})
    done = collector.runner("--workers", "3", "--once")
    assert done.returncode == 0, done.stderr
    first = collector.runner("metrics")
    assert first.returncode == 0, first.stderr
    printed = samples(first.stdout)

    ages = {labels: value for labels, value in printed["hubcollect_data_age_seconds"]}
    assert set(ages) == {'spider="trending"', 'spider="search"', 'spider="docs"'}, ages
    assert all(0 <= age < 120 for age in ages.values()), ages
    lists = {labels for labels, _ in printed["hubcollect_list_age_seconds"]}
    assert lists == {'spider="trending",list="trending?since=daily"',
                     'spider="search",list="few"',
                     'spider="search",list="few \\"a\\\\b\\""',
                     f'spider="docs",list="{site}"'}, lists
    intervals = dict(printed["hubcollect_round_interval_seconds"])
    assert intervals == {'spider="trending"': 1.0, 'spider="search"': 1.0,
                         'spider="docs"': 1.0}
    items = dict(printed["hubcollect_shard_round_items"])
    assert items['spider="search",shard="0/1"'] == 14, items  # 7 repositories per query
    assert all(value == 0 for _, value in printed["hubcollect_shard_unusual"])

    # The runner's own textfile for node_exporter carries them too.
    textfile = samples((collector.data_dir / "state" / "metrics" / "hubcollect.prom").read_text()
                       .removesuffix("# EOF\n"))
    assert {labels for labels, _ in textfile["hubcollect_list_age_seconds"]} == lists

    # The ages move while nothing new comes.
    later = samples(collector.runner("metrics").stdout)
    assert all(value > ages[labels] for labels, value in later["hubcollect_data_age_seconds"])

    # Every family metrics declares, sampled or not yet (days left needs an hour of growth).
    names = set(re.findall(r"^# TYPE (hubcollect_[a-z_]+) gauge$", first.stdout, re.M))
    assert set(printed) <= names
    for path in (MONITORING / "hubcollect-alerts.yml", MONITORING / "grafana-dashboard.json"):
        used = used_in_rules(path) if path.suffix == ".yml" else used_in_dashboard(path)
        assert used, path
        assert used <= names, f"{path.name} uses metrics metrics does not print: " \
                              f"{sorted(used - names)}"
