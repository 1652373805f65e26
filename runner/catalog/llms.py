"""``python -m runner export --format llms --out DIR [--date YYYY-MM-DD]``: each docs site as
an LLM reads it (https://llmstxt.org).

Per site, under ``DIR/{site}/``: ``llms.txt`` (the site's title, a one-line summary, its pages
as a linked index, each with its token estimate), ``llms-full.txt`` (every page's Markdown
under its title, URL and token estimate), one ``.md`` per page at the page's path under the
site, and ``tokens.json``. A page's estimate is of its ``.md`` document. Pages are the catalog's
latest content of each page, or with ``--date`` the content each page had at the end of that
day (UTC) or at a given moment. A site is a configured start URL's prefix
(``docs.start_urls``); the index lists its pages in the order the crawl first collected them,
which is the order it found them in.

Token counts are an estimate without a tokenizer: ⌈characters / 4⌉, the usual rule of thumb for
English text with GPT-style tokenizers (code and other languages run higher).
"""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from scraper.docpages.sites import site_prefix

TOKEN_ESTIMATE = "ceil(characters / 4)"
SUMMARY_CHARS = 200
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

# The content each page had at a moment: its newest version first seen by then.
_AT = (
    "SELECT v.url, c.title, c.markdown FROM docs_versions v JOIN docs_contents c "
    "ON c.url = v.url AND c.content_hash = v.content_hash WHERE v.first_seen <= :at AND "
    "v.first_seen = (SELECT max(w.first_seen) FROM docs_versions w WHERE w.url = v.url AND "
    "w.first_seen <= :at) ORDER BY (SELECT min(first_seen) FROM docs_versions f "
    "WHERE f.url = v.url), v.url")
_LATEST = (
    "SELECT p.url, c.title, c.markdown FROM docs_pages p JOIN docs_contents c "
    "ON c.url = p.url AND c.content_hash = p.content_hash ORDER BY p.first_seen, p.url")


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def site_dir_name(prefix: str) -> str:
    """``https://docs.scrapy.org/en/latest/`` → ``docs.scrapy.org-en-latest``."""
    parts = urlsplit(prefix)
    name = "-".join(filter(None, [parts.netloc, *parts.path.split("/")]))
    return _UNSAFE.sub("_", name) or "site"


def page_path(url: str, prefix: str) -> str:
    """Where a page's ``.md`` goes under its site's directory: its path below the site,
    ``index.md`` for a directory, never outside the directory."""
    rest = unquote(urlsplit(url).path)[len(urlsplit(prefix).path):]
    parts = [_UNSAFE.sub("_", part) for part in rest.split("/") if part not in ("", ".", "..")]
    if not parts or rest.endswith("/"):
        parts.append("index")
    stem = parts[-1]
    parts[-1] = (stem.rsplit(".", 1)[0] if stem.endswith((".html", ".htm")) else stem) + ".md"
    return "/".join(parts)


def summary_line(markdown: str) -> str:
    """The first paragraph of prose in a page's Markdown, on one line."""
    for block in markdown.split("\n\n"):
        block = " ".join(block.split())
        if block and not block.startswith(("#", "```", "|", "-", ">", "!", "[")):
            return block if len(block) <= SUMMARY_CHARS else block[:SUMMARY_CHARS - 1] + "…"
    return ""


@dataclass(slots=True)
class Site:
    prefix: str
    out: Path
    pages: list[tuple[str, str, int]] = field(default_factory=list)  # url, title, tokens
    paths: set[str] = field(default_factory=set)  # the .md files written so far
    title: str = ""
    summary: str = ""

    def add(self, url: str, title: str | None, markdown: str) -> None:
        title = " ".join((title or "").split()) or url
        document = f"# {title}\n\nURL: {url}\n\n{markdown}\n"
        tokens = estimate_tokens(document)
        in_full = f"# {title}\n\nURL: {url}\nTokens: about {tokens:,}\n\n{markdown}\n"
        self.out.mkdir(parents=True, exist_ok=True)
        # Appended page by page: memory holds one page, never the site.
        with open(self.out / ".llms-full.txt.tmp", "a" if self.pages else "w",
                  encoding="utf-8") as full:
            full.write(f"\n{in_full}" if self.pages else in_full)
        path = page_path(url, self.prefix)
        if path in self.paths:  # /a and /a.html, or URLs that differ in their query
            import hashlib  # here: `status` imports this module, and OpenSSL costs it ~3 ms

            path = f"{path[:-3]}-{hashlib.sha256(url.encode()).hexdigest()[:8]}.md"
        self.paths.add(path)
        write_atomic(self.out / path, document)
        self.pages.append((url, title, tokens))
        if url == self.prefix or not self.title:
            self.title = title
            self.summary = summary_line(markdown) or self.summary

    def finish(self) -> int:
        """Write llms.txt and tokens.json, put llms-full.txt in place; the site's tokens."""
        os.replace(self.out / ".llms-full.txt.tmp", self.out / "llms-full.txt")
        total = sum(tokens for _, _, tokens in self.pages)
        lines = [f"# {self.title}", ""]
        if self.summary:
            lines += [f"> {self.summary}", ""]
        lines += [f"Documentation collected from {self.prefix}: {len(self.pages)} pages, about "
                  f"{total:,} tokens ({TOKEN_ESTIMATE}). Every page's Markdown is in "
                  "llms-full.txt.", "", "## Pages", ""]
        lines += [f"- [{title.replace(']', '')}]({url}): about {tokens:,} tokens"
                  for url, title, tokens in self.pages]
        write_atomic(self.out / "llms.txt", "\n".join(lines) + "\n")
        write_atomic(self.out / "tokens.json", json.dumps(
            {"estimate": TOKEN_ESTIMATE, "site": self.prefix, "tokens": total,
             "pages": {url: tokens for url, _, tokens in self.pages}}, indent=1) + "\n")
        return total


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def site_of(url: str, prefixes: list[str]) -> str:
    """The configured site a page is under (the longest prefix), else its host's root."""
    under = [prefix for prefix in prefixes if url.startswith(prefix)]
    if under:
        return max(under, key=len)
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"


def pages(conn: sqlite3.Connection, date: str | None) -> Iterator[tuple[str, str, str]]:
    if date is None:
        yield from conn.execute(_LATEST)
    else:
        yield from conn.execute(_AT, {"at": date})


def export_llms(conn: sqlite3.Connection, out: Path, start_urls: list[str],
                date: str | None = None) -> list[tuple[str, Path, int, int]]:
    """Write every site, with ``date`` (ISO-8601 UTC) as it was then; returns (site prefix, its
    directory, pages, tokens) per site."""
    prefixes = sorted({site_prefix(url) for url in start_urls})
    sites: dict[str, Site] = {}
    for url, title, markdown in pages(conn, date):
        prefix = site_of(url, prefixes)
        site = sites.get(prefix)
        if site is None:
            site = sites[prefix] = Site(prefix, out / site_dir_name(prefix))
        site.add(url, title, markdown or "")
    return [(site.prefix, site.out, len(site.pages), site.finish()) for site in sites.values()]
