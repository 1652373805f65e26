"""Per docs site, how much of what its pages show the catalog's Markdown keeps, per form (code
blocks byte-exact, tab panels under their labels, tables with every cell under its header,
callouts under their titles), and how many pages are below 100% in each: what ``status`` and
``catalog`` show, from each page's latest content (runner/catalog/llms.py groups pages into
sites the same way)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from runner.catalog.llms import site_of
from runner.catalog.schema import connect
from scraper.config.collector import CollectorConfig
from scraper.docpages.fidelityrecord import FIELDS, FORMS
from scraper.docpages.sites import site_prefix
from scraper.utils.layout import DataLayout

_LATEST = (
    "SELECT p.url, {counts} FROM docs_pages p "
    "JOIN docs_contents c ON c.url = p.url AND c.content_hash = p.content_hash "
    "WHERE c.code_blocks IS NOT NULL")


@dataclass(slots=True)
class SiteFidelity:
    site: str
    pages: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FIELDS, 0))
    pages_below: int = 0  # pages whose Markdown keeps less than they show, in any form
    below: dict[str, int] = field(  # by form (its shown field): pages below 100% in it
        default_factory=lambda: {shown: 0 for shown, _, _, _ in FORMS})

    def add(self, counts: dict[str, int]) -> None:
        self.pages += 1
        short = False
        for shown, kept, _, _ in FORMS:
            self.counts[shown] += counts[shown]
            self.counts[kept] += counts[kept]
            if counts[kept] < counts[shown]:
                self.below[shown] += 1
                short = True
        self.pages_below += short

    def forms(self) -> list[str]:
        """Each form the site's pages show (code blocks always): "kept/shown what (share)"."""
        parts = []
        for shown, kept, noun, how in FORMS:
            total, held = self.counts[shown], self.counts[kept]
            if total or shown == "code_blocks":
                share = f"{held / total:.1%}" if total else "none"
                parts.append(f"{held:,}/{total:,} {noun} {how} ({share})")
        return parts

    def pages_line(self) -> str:
        text = f"on {self.pages:,} pages"
        if self.pages_below:
            forms = ", ".join(f"{noun} {self.below[shown]}" for shown, _, noun, _ in FORMS
                              if self.below[shown])
            text += f", {self.pages_below} pages below 100% ({forms})"
        return text

    def describe(self) -> str:
        return f"{self.site}: {', '.join(self.forms())} {self.pages_line()}"


def site_fidelity(conn: sqlite3.Connection, start_urls: list[str]) -> list[SiteFidelity]:
    prefixes = sorted({site_prefix(url) for url in start_urls})
    # A catalog this build has not brought up to date yet lacks the later counts: NULL.
    have = {row[1] for row in conn.execute("PRAGMA table_info(docs_contents)")}
    counts = ", ".join(f"c.{name}" if name in have else "NULL" for name in FIELDS)
    sites: dict[str, SiteFidelity] = {}
    for url, *values in conn.execute(_LATEST.format(counts=counts)):
        site = site_of(url, prefixes)
        # A count an older item lacks (NULL) is none of that form.
        sites.setdefault(site, SiteFidelity(site)).add(
            {name: value or 0 for name, value in zip(FIELDS, values, strict=True)})
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
