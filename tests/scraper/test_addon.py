"""The add-on is the one bridge from the config to settings, and ``-s`` wins over it for all."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from scrapy.crawler import AsyncCrawlerRunner, Crawler, CrawlerRunner
from scrapy.settings import Settings
from scrapy.utils.misc import load_object
from scrapy.utils.reactor import is_reactor_installed
from scrapy.utils.test import get_reactor_settings

from scraper.config.moved import MOVED_MODULES, MOVED_NAMES, moved_path
from spiders.docs import DocsSpider
from spiders.search import SearchSpider


def crawler(spidercls: type, config: Path, **cmdline: object) -> Crawler:
    """As Scrapy's get_crawler, on the project's settings, ``cmdline`` as ``-s`` would set it."""
    settings = Settings()
    settings.setmodule("scraper.settings", priority="project")
    settings.setdict(get_reactor_settings(), priority="project")
    settings.setdict({"COLLECTOR_CONFIG": str(config), **cmdline}, priority="cmdline")
    runner = (CrawlerRunner if is_reactor_installed() else AsyncCrawlerRunner)(settings)
    made = runner.create_crawler(spidercls)
    made._apply_settings()
    return made


def test_s_github_api_url_moves_the_search_spiders_urls_too(tmp_path: Path) -> None:
    config = tmp_path / "collector.yaml"
    config.write_text("github: {api_url: 'http://127.0.0.1:1/file'}\n"
                      "spiders: {search: {queries: [q1], per_page: 7}}\n")
    for cmdline, api in (({}, "http://127.0.0.1:1/file"),
                         ({"GITHUB_API_URL": "http://127.0.0.1:2/flag"}, "http://127.0.0.1:2/flag")):
        made = crawler(SearchSpider, config, **cmdline)
        spider = SearchSpider.from_crawler(made)
        assert spider.start_entries() == ["q1"]
        assert spider.query_url("q1") == (
            f"{api}/search/repositories?q=q1&sort=stars&order=desc&per_page=7")
        assert spider.api_origin == ("http", "127.0.0.1", int(api.split(":")[2][0]))
        assert made.settings["GITHUB_API_URL"] == api  # the token's origin and the budget's


def test_the_configs_spider_settings_sit_over_custom_settings_under_cmdline(
        tmp_path: Path) -> None:
    config = tmp_path / "collector.yaml"
    config.write_text("spiders: {docs: {start_urls: ['http://127.0.0.1:1/a/'], "
                      "max_pages_per_site: 5, settings: {DOWNLOAD_MAXSIZE: 1000, "
                      "DOWNLOAD_WARNSIZE: 500}}}\n")
    made = crawler(DocsSpider, config, DOWNLOAD_WARNSIZE=600)
    spider = DocsSpider.from_crawler(made)
    assert spider.start_entries() == ["http://127.0.0.1:1/a/"]
    assert spider.max_pages_per_site == 5
    assert made.settings.getint("DOWNLOAD_MAXSIZE") == 1000  # over custom_settings' 2 MB
    assert made.settings.getint("DOWNLOAD_WARNSIZE") == 600  # -s wins
    assert made.settings.getint("DOWNLOAD_MAXSIZE") != DocsSpider.custom_settings[
        "DOWNLOAD_MAXSIZE"]


def test_class_paths_from_before_the_feature_folders_still_load_with_one_line_each(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = tmp_path / "collector.yaml"
    config.write_text(
        "spiders: {docs: {start_urls: ['http://127.0.0.1:1/a/'], settings: {"
        "CONTENTHASH_STORAGE: scraper.stores.sqlite.contenthash.SqliteContentHashStorage, "
        "BUDGET_STORAGE: scraper.stores.memory.MemoryBudgetStorage, "
        "ITEM_PIPELINES: {pipelines.contenthash.ContentHashPipeline: 100, "
        "pipelines.itemstore.JsonLinesItemStore: 900}}}}\n")
    with caplog.at_level("WARNING", logger="scraper.config.moved"):
        made = crawler(DocsSpider, config)
    lines = [r.getMessage() for r in caplog.records if r.name == "scraper.config.moved"]
    assert len(lines) == 3, lines
    assert lines[0] == (
        "spiders.docs.settings.CONTENTHASH_STORAGE: "
        "scraper.stores.sqlite.contenthash.SqliteContentHashStorage moved to "
        "scraper.dedup.sqlitehashes.SqliteContentHashStorage; write the new path (the old one "
        "is read until 0.3)")
    assert made.settings["CONTENTHASH_STORAGE"] == (
        "scraper.dedup.sqlitehashes.SqliteContentHashStorage")
    assert made.settings["BUDGET_STORAGE"] == "scraper.budget.memorybudget.MemoryBudgetStorage"
    pipelines = made.settings.getdict("ITEM_PIPELINES")
    assert "scraper.dedup.contenthash.ContentHashPipeline" in pipelines
    assert "pipelines.contenthash.ContentHashPipeline" not in pipelines
    for path in (made.settings["CONTENTHASH_STORAGE"], made.settings["BUDGET_STORAGE"],
                 *pipelines):
        load_object(path)  # each names a class that exists


def test_every_moved_module_names_a_module_that_exists() -> None:
    for new in MOVED_MODULES.values():
        importlib.import_module(new)
    for path in MOVED_NAMES.values():
        load_object(path)
    assert moved_path("scraper.settings.X") is None
    assert moved_path("scraper.distributed.scheduler.RedisScheduler") == (
        "scraper.cluster.scheduler.RedisScheduler")
