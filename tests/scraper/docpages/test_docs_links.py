"""The links a page follows: the joining of simple relative links and the skipping of other
sites' URLs without ``urljoin`` (issue 37) give what ``urljoin`` then ``page_in_site`` give, on
every real page and on random links over the characters that change a join."""

from __future__ import annotations

import random
from pathlib import Path
from urllib.parse import urljoin

import pytest

from scraper.docpages.extract import base_url, follow_links, page_in_site, page_selector

DATA = Path(__file__).parents[2] / "data"
PAGES = sorted((*(DATA / "docs").glob("*.html"), *(DATA / "generators").glob("*.html")))
BASES = ["http://docs.test/en/stable/guide/page.html", "http://docs.test/", "https://d.test/a/b/",
         "http://docs.test/a//b/c", "http://docs.test/a/./b/", "http://docs.test/a/../b/x",
         "http://docs.test/a;p/b;q", "HTTP://Docs.test/a/b", "http://docs.test", "ftp://x/a/",
         "http://docs.test/a/b?q=1#f", "http://docs.test/é/b", "http://docs.test/a b/c"]
PIECES = ["a", "b", "/", "/", ".", "..", "./", "../", "?", "#", ";", ":", "%2F", "=", "&", "~",
          "-", "_", "x.png", ".PDF", "http://", "https://", "docs.test", "d.test", "//", "\t",
          " ", "[", "]", "é", "\n", "index.html", "stable", "en"]


def reference(html: str, page_url: str, prefix: str) -> list[str]:
    """follow_links as it was: every link through urljoin and page_in_site."""
    selector = page_selector(html)
    base = base_url(selector, page_url)
    found = []
    for anchor in selector.root.iter("a"):
        href = (anchor.get("href") or "").strip()
        if not href or href.startswith(("#", "mailto:", "javascript:", "tel:")):
            continue
        url = page_in_site(urljoin(base, href), prefix)
        if url is not None:
            found.append(url)
    return found


def joined(html: str, page_url: str, prefix: str) -> list[str] | str:
    try:
        return reference(html, page_url, prefix)
    except ValueError as error:
        return f"ValueError: {error}"


def followed(html: str, page_url: str, prefix: str) -> list[str] | str:
    try:
        return list(follow_links(page_selector(html), page_url, prefix))
    except ValueError as error:
        return f"ValueError: {error}"


@pytest.mark.parametrize("path", PAGES, ids=[p.stem for p in PAGES])
def test_a_pages_links_are_those_urljoin_gives(path: Path) -> None:
    html = path.read_text(encoding="utf-8", errors="replace")
    for url, prefix in ((f"http://docs.test/pages/{path.stem}/", "http://docs.test/pages/"),
                        ("https://docs.test/en/stable/x/index.html", "https://docs.test/en/")):
        assert followed(html, url, prefix) == joined(html, url, prefix)


@pytest.mark.parametrize("seed", range(8))
def test_random_links_are_joined_as_urljoin_joins_them(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        hrefs = ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6)))
                 for _ in range(25)]
        anchors = "".join(f'<a href="{href}">x</a>' for href in hrefs)
        base = rng.choice(BASES)
        head = f'<base href="{rng.choice(BASES)}">' if rng.random() < 0.2 else ""
        html = f"<html><head>{head}</head><body>{anchors}</body></html>"
        for prefix in ("http://docs.test/", "http://docs.test/en/", "https://d.test/a/"):
            assert followed(html, base, prefix) == joined(html, base, prefix), (base, hrefs)
