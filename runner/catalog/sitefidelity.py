"""Per docs site, how much of its code the catalog's Markdown holds byte-exact: what ``status``
and ``catalog`` show, from each page's latest content (runner/catalog/llms.py groups pages into
sites the same way)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from runner.catalog.llms import site_of
from runner.catalog.schema import connect
from scraper.config.collector import CollectorConfig
from scraper.docpages.sites import site_prefix
from scraper.utils.layout import DataLayout

_LATEST = (
    "SELECT p.url, c.code_blocks, c.code_blocks_exact FROM docs_pages p JOIN docs_contents c "
    "ON c.url = p.url AND c.content_hash = p.content_hash WHERE c.code_blocks IS NOT NULL")


@dataclass(slots=True)
class SiteFidelity:
    site: str
    pages: int = 0
    code_blocks: int = 0
    code_blocks_exact: int = 0
    pages_below: int = 0  # pages whose Markdown holds fewer than all their code blocks

    def totals(self) -> str:
        share = (f"{self.code_blocks_exact / self.code_blocks:.1%}" if self.code_blocks
                 else "no code")
        below = f", {self.pages_below} pages below 100%" if self.pages_below else ""
        return (f"{self.code_blocks_exact:,}/{self.code_blocks:,} code blocks byte-exact "
                f"({share}) on {self.pages:,} pages{below}")

    def describe(self) -> str:
        return f"{self.site}: {self.totals()}"


def site_fidelity(conn: sqlite3.Connection, start_urls: list[str]) -> list[SiteFidelity]:
    prefixes = sorted({site_prefix(url) for url in start_urls})
    sites: dict[str, SiteFidelity] = {}
    for url, blocks, exact in conn.execute(_LATEST):
        site = site_of(url, prefixes)
        totals = sites.setdefault(site, SiteFidelity(site))
        totals.pages += 1
        totals.code_blocks += blocks
        totals.code_blocks_exact += exact or 0
        totals.pages_below += (exact or 0) < blocks
    return [sites[site] for site in sorted(sites)]


def catalog_fidelity(layout: DataLayout, config: CollectorConfig) -> list[SiteFidelity]:
    """The per-site totals from the catalog as it stands; none before a catalog has docs
    contents (never built, or built before it kept them)."""
    if not layout.catalog_db.exists():
        return []
    try:
        conn = connect(layout.catalog_db, readonly=True)
    except sqlite3.Error:
        return []
    try:
        return site_fidelity(conn, config.docs.start_entries())
    except sqlite3.Error:
        return []
    finally:
        conn.close()
