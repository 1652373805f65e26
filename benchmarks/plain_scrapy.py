"""Plain Scrapy as a contender: a stock Scrapy process doing the docs spider's extraction.

    python -m benchmarks.plain_scrapy --feed FILE --summary FILE URL...

No project settings, stores, middlewares or extensions of the collector: Scrapy's defaults with
the benchmark's concurrency (16, also per host), no autothrottle, robots.txt obeyed, and the
collector's own page extraction (``scraper.docpages.extract``: title, headings, visible text, links
under the start path). Items go to a JSON Lines feed, Scrapy's usual way. This is what "one
plain Scrapy process" means in the tables; ``scrapy crawl docs`` (the collector, no runner) is
a separate row.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response, TextResponse

from benchmarks.common import BENCH_SCRAPY_SETTINGS
from scraper.docpages.extract import extract_page, follow_links
from scraper.docpages.sites import site_prefix


class PlainDocsSpider(scrapy.Spider):
    name = "plain_docs"

    def __init__(self, urls: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = urls
        self.first_item_at: float | None = None

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.urls:
            yield scrapy.Request(url, meta={"site": site_prefix(url)})

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if not isinstance(response, TextResponse):
            return
        page = extract_page(response.selector)
        if self.first_item_at is None:
            self.first_item_at = time.time()
        yield {"url": response.url, "title": page.title, "headings": page.headings,
               "text": page.text}
        prefix = response.meta["site"]
        for url in follow_links(response.selector, response.url, prefix):
            yield scrapy.Request(url, meta={"site": prefix})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--feed", type=Path, required=True)
    parser.add_argument("--summary", type=Path, required=True)
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("urls", nargs="+")
    args = parser.parse_args(argv)
    process = CrawlerProcess({
        **BENCH_SCRAPY_SETTINGS,
        "ROBOTSTXT_OBEY": True,
        "LOG_LEVEL": args.log_level,
        "TELNETCONSOLE_ENABLED": False,
        "FEEDS": {str(args.feed): {"format": "jsonlines", "encoding": "utf-8"}},
    })
    crawler = process.create_crawler(PlainDocsSpider)
    summary: dict[str, Any] = {}

    def closed(spider: PlainDocsSpider, reason: str) -> None:
        stats = crawler.stats.get_stats() if crawler.stats else {}
        summary.update(pages=int(stats.get("item_scraped_count", 0)), reason=reason,
                       first_item_at=spider.first_item_at,
                       stats={k: v for k, v in stats.items() if isinstance(v, int | float)})

    crawler.signals.connect(closed, signal=signals.spider_closed)
    process.crawl(crawler, urls=args.urls)
    process.start()
    args.summary.write_text(json.dumps(summary), encoding="utf-8")
    return 0 if summary.get("reason") == "finished" else 1


if __name__ == "__main__":
    raise SystemExit(main())
