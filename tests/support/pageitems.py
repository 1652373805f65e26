"""Every item the docs and trending spiders make of the project's real pages, as the bytes the
item store writes: recorded once in ``tests/data/page_items/`` from the code before the per-page
cost work of issue 37 (dfcdfdb), and compared byte for byte by
``tests/scraper/test_page_items.py``, so a faster extraction is proved to write the same items.
Recorded again only for a fix that changes items on purpose, the diff reviewed line by line
(the text after an HTML comment, which the walks dropped: one page's text and Markdown).

Each page goes through the real spider's ``parse`` (``project_crawler``: the project's settings,
in-memory stores) as an ``HtmlResponse`` of its file, then through the content-hash stamp and
``json_line``, the item store's own serialisation. The wall-clock fields (``collected_at``, a
trending page's ``observed_at`` and ``parsed_at``) are set to one fixed value first; the links a
docs page follows are recorded after its item.

    python -m tests.support.pageitems        # record the items of the code in this tree
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy.http import HtmlResponse

from pipelines.itemstore import json_line
from scraper.dedup.contenthash import ContentHashPipeline
from spiders.docs import DocsSpider
from spiders.trending import TrendingSpider
from tests.support.incrawler import MEMORY, project_crawler
from tests.support.paths import DATA

GOLDEN = DATA / "page_items"
DOCS_DIRS = (DATA / "docs", DATA / "generators")
TRENDING_DIRS = ((DATA / "github" / "trending", "https://github.com/trending/{lang}"),
                 (DATA / "trending_developers", "https://github.com/trending/developers/{lang}"))
VOLATILE = ("collected_at", "observed_at", "parsed_at")
FIXED_TIME = "2026-01-01T00:00:00.000Z"


def docs_pages() -> list[Path]:
    return sorted(path for directory in DOCS_DIRS for path in directory.glob("*.html"))


def trending_pages() -> list[tuple[Path, str]]:
    """Each trending page and the URL it is read at: its language and period from its name
    (``2026-04_python_daily.html``), ``all`` being every language."""
    pages = []
    for directory, pattern in TRENDING_DIRS:
        for path in sorted(directory.glob("*.html")):
            _, language, period = path.stem.split("_")
            url = pattern.format(lang="" if language == "all" else language).rstrip("/")
            pages.append((path, f"{url}?since={period}"))
    return pages


def docs_url(path: Path) -> str:
    return f"http://docs.test/{path.parent.name}/{path.stem}/"


def written(item: Any) -> str:
    """The line the item store writes for ``item``, its wall-clock fields fixed."""
    for name in VOLATILE:
        if name in item.fields and item.get(name) is not None:
            item[name] = FIXED_TIME
    ContentHashPipeline.stamp(item)
    return json_line(item).decode("utf-8")


def lines(outputs: Iterator[Any]) -> list[str]:
    """A callback's output: each item's line, then ``follow <url>`` per request, in order."""
    out = []
    for output in outputs:
        if isinstance(output, scrapy.Request):
            out.append(f"follow {output.url}\n")
        else:
            out.append(written(output))
    return out


def docs_lines(path: Path) -> list[str]:
    spider = project_crawler(DocsSpider, **MEMORY).spider
    assert isinstance(spider, DocsSpider)
    url = docs_url(path)
    response = HtmlResponse(url, body=path.read_bytes(), request=scrapy.Request(url))
    return lines(spider.parse(response))


def trending_lines(path: Path, url: str) -> list[str]:
    spider = project_crawler(TrendingSpider, **MEMORY).spider
    assert isinstance(spider, TrendingSpider)
    response = HtmlResponse(url, body=path.read_bytes(), request=scrapy.Request(url))
    try:
        return lines(spider.parse(response))
    finally:
        spider.closed("finished")


def record_all() -> dict[str, dict[str, list[str]]]:
    """{"docs": {page: lines}, "trending": {page: lines}} of the code in this tree."""
    return {
        "docs": {f"{p.parent.name}/{p.name}": docs_lines(p) for p in docs_pages()},
        "trending": {f"{p.parent.name}/{p.name}": trending_lines(p, url)
                     for p, url in trending_pages()},
    }


def golden_path(kind: str) -> Path:
    return GOLDEN / f"{kind}.json"


def read_golden(kind: str) -> dict[str, list[str]]:
    data: dict[str, list[str]] = json.loads(golden_path(kind).read_text(encoding="utf-8"))
    return data


def main(argv: list[str]) -> int:
    if argv:
        print("usage: python -m tests.support.pageitems", file=sys.stderr)
        return 2
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for kind, pages in record_all().items():
        golden_path(kind).write_text(json.dumps(pages, indent=1, ensure_ascii=False) + "\n",
                                     encoding="utf-8")
        print(f"{kind}: {len(pages)} pages, {sum(map(len, pages.values()))} lines "
              f"-> {golden_path(kind)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
