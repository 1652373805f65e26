"""Crawlee for Python's ParselCrawler as a contender, doing the docs spider's extraction.

    python -m benchmarks.crawlee_parsel --storage DIR --summary FILE URL...

Crawlee's defaults (its HTTP client, autoscaled pool, file-system storage for the request queue
and the dataset) with concurrency up to 16, robots.txt respected, 3 retries, and the collector's
own page extraction (``scraper.docpages.extract``). Runs only when ``crawlee`` is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from scraper.docpages.extract import extract_page, follow_links
from scraper.docpages.sites import site_prefix

CONCURRENCY = 16


async def crawl(urls: list[str]) -> dict[str, Any]:
    from crawlee import ConcurrencySettings, Request
    from crawlee.crawlers import ParselCrawler, ParselCrawlingContext

    crawler = ParselCrawler(
        concurrency_settings=ConcurrencySettings(
            min_concurrency=1, desired_concurrency=CONCURRENCY, max_concurrency=CONCURRENCY),
        max_request_retries=3, respect_robots_txt_file=True, configure_logging=False)
    first: dict[str, float] = {}

    @crawler.router.default_handler
    async def handler(context: ParselCrawlingContext) -> None:
        page = extract_page(context.selector)
        first.setdefault("at", time.time())
        await context.push_data({"url": context.request.url, "title": page.title,
                                 "headings": page.headings, "text": page.text})
        prefix = context.request.user_data["site"]
        links = follow_links(context.selector, context.request.url, prefix)
        await context.add_requests(
            [Request.from_url(url, user_data={"site": prefix}) for url in links])

    stats = await crawler.run(
        [Request.from_url(url, user_data={"site": site_prefix(url)}) for url in urls])
    return {"pages": int(stats.requests_finished), "failed": int(stats.requests_failed),
            "first_item_at": first.get("at")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--storage", type=Path, required=True)
    parser.add_argument("--summary", type=Path, required=True)
    parser.add_argument("urls", nargs="+")
    args = parser.parse_args(argv)
    os.environ["CRAWLEE_STORAGE_DIR"] = str(args.storage)
    os.environ.setdefault("CRAWLEE_PURGE_ON_START", "true")
    logging.basicConfig(level=logging.WARNING)
    summary = asyncio.run(crawl(args.urls))
    args.summary.write_text(json.dumps(summary), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
