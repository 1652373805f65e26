"""The floor a page's cost is measured against: plain Scrapy doing the least a collector does.

    python -m benchmarks.plain_floor docs --feed FILE URL...       # title and text, a JSON line
    python -m benchmarks.plain_floor trending --feed FILE URL...   # the rows, a JSON line each

Scrapy's defaults with the benchmark's concurrency (``BENCH_SCRAPY_SETTINGS``), robots.txt
obeyed, no link following, items to a JSON Lines feed. ``docs``: ``lxml.html.fromstring``, the
``<title>`` and the body's text. ``trending``: ``lxml.html.fromstring`` and, per
``article.Box-row``, the repository, description, language and star counts. Used by
``benchmarks/pagecost.py``; none of the collector's code runs here.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import lxml.html
import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response

from benchmarks.common import BENCH_SCRAPY_SETTINGS

_WHITESPACE_SPLIT = str.split


def squeeze(text: str) -> str:
    return " ".join(_WHITESPACE_SPLIT(text))


def docs_item(response: Response) -> dict[str, Any]:
    tree = lxml.html.fromstring(response.text)
    body = tree.find("body")
    return {"url": response.url, "title": squeeze(tree.findtext(".//title") or ""),
            "text": squeeze((body if body is not None else tree).text_content())}


def trending_items(response: Response) -> Iterator[dict[str, Any]]:
    tree = lxml.html.fromstring(response.text)
    for rank, row in enumerate(tree.find_class("Box-row"), 1):
        link = row.find(".//h2/a") if row.find(".//h2/a") is not None else row.find(".//h1/a")
        language = row.find(".//*[@itemprop='programmingLanguage']")
        description = row.find(".//p")
        counts = [squeeze(a.text_content()) for a in row.iter("a")
                  if "/stargazers" in (a.get("href") or "") or "/forks" in (a.get("href") or "")]
        period = row.find_class("float-sm-right")
        yield {"url": response.url, "rank": rank,
               "repo": (link.get("href") or "").strip("/") if link is not None else None,
               "description": squeeze(description.text_content())
               if description is not None else None,
               "language": squeeze(language.text_content()) if language is not None else None,
               "counts": counts,
               "period_stars": squeeze(period[0].text_content()) if period else None}


class PlainSpider(scrapy.Spider):
    name = "plain_floor"

    def __init__(self, kind: str, urls: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kind = kind
        self.urls = urls

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.urls:
            yield scrapy.Request(url)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[dict[str, Any]]:
        if self.kind == "docs":
            yield docs_item(response)
        else:
            yield from trending_items(response)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.plain_floor",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("kind", choices=("docs", "trending"))
    parser.add_argument("--feed", type=Path, required=True)
    parser.add_argument("--log-level", default="WARNING")
    parser.add_argument("--urls-file", type=Path, help="one URL a line, after those given")
    parser.add_argument("urls", nargs="*")
    args = parser.parse_args(argv)
    urls = list(args.urls)
    if args.urls_file:
        urls += args.urls_file.read_text(encoding="utf-8").split()
    process = CrawlerProcess({
        **BENCH_SCRAPY_SETTINGS,
        "ROBOTSTXT_OBEY": True,
        "LOG_LEVEL": args.log_level,
        "TELNETCONSOLE_ENABLED": False,
        "FEEDS": {str(args.feed): {"format": "jsonlines", "encoding": "utf-8"}},
    })
    process.crawl(PlainSpider, kind=args.kind, urls=urls)
    process.start()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
