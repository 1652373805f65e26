"""The search spider against the fake GitHub: configuring queries, reading what the fake was
asked, and the result ids a query must give."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import yaml

from scraper.config.collector import RateLimit
from tests.support.collector import Collector
from tests.support.fakes.github import parse_search, search_results
from tests.support.fakes.launcher import FakeServer

LIMIT, WINDOW = 30, 2.0
"""The fake's search limit: requests per window (seconds)."""


def configure(collector: Collector, fake: Any, queries: list[str], **search: Any) -> None:
    collector.configure(github=fake, spiders={"search": {"queries": queries, "per_page": 100,
                                                         **search}})
    config = yaml.safe_load(collector.config_path.read_text())
    config["github"]["limits"] = {"search": {"limit": LIMIT, "window": WINDOW}}
    collector.config_path.write_text(yaml.safe_dump(config, sort_keys=False))


def expected_ids(query: str, generation: int = 0) -> set[int]:
    """Every repository the fake holds for ``query``: the complete result set."""
    text, keep = parse_search(query)
    return {r.id for r in search_results(text, generation, "stars", "desc") if keep(r)}


def search_requests(fake: FakeServer) -> list[dict[str, Any]]:
    rows = [r for r in fake.stats()["requests"] if r["path"] == "/search/repositories"]
    for r in rows:
        r["params"] = {k: v[0] for k, v in parse_qs(r["query"]).items()}
    return rows


def is_probe(request: dict[str, Any]) -> bool:
    return request["params"].get("per_page") == "1"


API = "http://127.0.0.1:9"


GITHUB = {"GITHUB_API_URL": API, "GITHUB_WEB_URL": "http://127.0.0.1:8",
          "GITHUB_RATE_LIMITS": {"search": RateLimit(30, 60.0), "core": RateLimit(60, 3600.0)}}
