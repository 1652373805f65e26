"""The add-on is the one bridge from the config to settings, and ``-s`` wins over it for all."""

from __future__ import annotations

from pathlib import Path

from scrapy.crawler import AsyncCrawlerRunner, Crawler, CrawlerRunner
from scrapy.settings import Settings
from scrapy.utils.reactor import is_reactor_installed
from scrapy.utils.test import get_reactor_settings

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
