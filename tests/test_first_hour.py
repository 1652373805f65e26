"""A Scrapy user's first hour with the project: its logs, Scrapy's own tools, exports, exit
statuses; each through the user's real command."""

from __future__ import annotations

from tests.support import Collector


def test_a_rounds_log_has_no_startup_inventory_unless_asked(collector: Collector,
                                                            fake_docs) -> None:
    collector.configure(docs_urls=[f"{fake_docs.url()}/site0/"])
    result = collector.crawl("docs")
    assert result.returncode == 0, result.stderr[-2000:]
    log = collector.log("docs")
    assert "Scrapy 2." in log and "Spider closed (finished)" in log
    for boilerplate in ("Enabled extensions", "Enabled downloader middlewares",
                        "Enabled item pipelines", "Enabled addons", "Overridden settings"):
        assert boilerplate not in log, boilerplate
    quiet = len(log.encode())

    result = collector.crawl("docs", None, "-s", "LOG_STARTUP_COMPONENTS=1",
                             "-a", "deltafetch_reset=1")
    assert result.returncode == 0, result.stderr[-2000:]
    loud = collector.log("docs")[len(log):]
    assert "Enabled extensions" in loud and "Overridden settings" in loud
    assert len(loud.encode()) - quiet > 3000
