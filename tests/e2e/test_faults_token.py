"""The GitHub token goes only on requests the GitHub spiders make, and only under ``api_url``.

The real ``scrapy crawl`` against tests/support/fakes/hostile.py, which records every request that
carries an ``Authorization`` header, with a token in the environment.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.collector import Collector, generous_budget, run_watched

TOKEN = "ghp_w23TokenThatMustStayHome0000000000"


@pytest.mark.timeout(90)
def test_a_docs_site_cannot_make_the_docs_spider_send_the_token(collector: Collector,
                                                                fake_hostile: Any) -> None:
    site = f"{fake_hostile.url()}/site/"
    collector.configure(docs_urls=[site + "toapi.html", f"{fake_hostile.url()}/shapes/"])
    generous_budget(collector, api_url=f"{fake_hostile.url()}/api")
    proc = collector.crawl("docs", env=collector.env(GITHUB_TOKEN=TOKEN), timeout=60)
    assert proc.returncode == 0, collector.log("docs")[-3000:]
    served = fake_hostile.stats()
    assert served["counts"].get("api:good:1") == 1  # the redirect was followed to the API
    assert served["authorized"] == []


@pytest.mark.timeout(90)
def test_the_token_goes_only_under_the_api_path(collector: Collector,
                                                fake_hostile: Any) -> None:
    """GitHub Enterprise Server: ``api_url`` is ``https://ghe.example/api/v3``; a next link to
    the same host outside that path (its web pages) gets no token."""
    collector.configure(spiders={"search": {"queries": ["good", "offpath"], "complete": False}})
    generous_budget(collector, web_url=fake_hostile.url(), web_min_interval=0,
                    api_url=f"{fake_hostile.url()}/api")
    collector.env = lambda **extra: Collector.env(collector, GITHUB_TOKEN=TOKEN, **extra)
    status, _, _ = run_watched(collector, "search", timeout=60)
    assert status == 0, collector.log("search")[-3000:]
    served = fake_hostile.stats()
    assert served["counts"]["/site/good0.html"] == 1  # asked, as the API's next page
    authorized = served["authorized"]
    assert authorized and all(target.startswith("url:/api/") for target in authorized), \
        authorized
    assert TOKEN not in collector.log("search")
