"""A reference docs crawl whose items two versions of the code can compare field by field.

``scrapy crawl docs`` against the fake docs host: generated sites (links in cycles, mirrors,
robots.txt, a flaky page, a PDF and a PNG not to follow) and every real page of
``tests/data/docs``. Each item field is recorded as a digest of its JSON, with the fake
host's address replaced, so a recording holds no page text and does not depend on the port;
the paths the host was asked for record the links followed.

    python -m tests.support.docs_reference OUT.json    # record the items of the code in this tree

``tests/data/docs_items_reference.json`` was first the recording of the code before the
per-page cost work (issue 17); ``tests/scraper/docpages/test_docs_items.py`` compares the
current code with it. A deliberate change to what a docs item holds records a new one: issue
42's (a collapsible MkDocs admonition written as a quote under its title, the fidelity counts
of each form) is the one there now.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from tests.support.collector import Collector
from tests.support.docs_fixtures import PAGES as FIXTURE_PAGES
from tests.support.paths import DATA

REFERENCE = DATA / "docs_items_reference.json"
SITES = 3
PAGES = 40
HOST = "http://docs.test"
VOLATILE = frozenset({"collected_at"})  # the wall clock of the crawl
# Fields added since the recording: compared to nothing, every other field stays the same.
ADDED_FIELDS = frozenset({"code_blocks", "code_blocks_exact", "version", "tabs", "tabs_labelled",
                          "tables", "tables_kept", "callouts", "callouts_kept"})


def start_urls(base: str) -> list[str]:
    return ([f"{base}/site{k}/" for k in range(SITES)]
            + [f"{base}/fixtures/{page.name}/" for page in FIXTURE_PAGES])


def digest(value: Any, base: str) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True).replace(base, HOST)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def record(collector: Collector, docs: Any) -> dict[str, Any]:
    """Crawl once and return {"items": {url: {field: digest}}, "requested": {path: count}}."""
    base = docs.url()
    collector.configure(docs_urls=start_urls(base))
    result = collector.crawl("docs", timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"scrapy crawl docs failed: {result.stderr[-2000:]}")
    items: dict[str, dict[str, str]] = {}
    for item in collector.items("docs"):
        url = item["url"].replace(base, HOST)
        items[url] = {key: digest(value, base) for key, value in sorted(item.items())
                      if key not in VOLATILE}
    requested = Counter(r["path"] for r in docs.stats()["requests"])
    return {"items": dict(sorted(items.items())), "requested": dict(sorted(requested.items()))}


def differences(reference: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """One line per item, field or request count that differs."""
    lines = []
    ref_items, cur_items = reference["items"], current["items"]
    for url in sorted(set(ref_items) | set(cur_items)):
        if url not in cur_items or url not in ref_items:
            lines.append(f"{url}: only in the {'reference' if url in ref_items else 'current'}")
            continue
        for field in sorted(set(ref_items[url]) | (set(cur_items[url]) - ADDED_FIELDS)):
            if ref_items[url].get(field) != cur_items[url].get(field):
                lines.append(f"{url}: field {field!r} differs")
    ref_req, cur_req = reference["requested"], current["requested"]
    for path in sorted(set(ref_req) | set(cur_req)):
        if ref_req.get(path) != cur_req.get(path):
            lines.append(f"request {path}: {ref_req.get(path, 0)} times in the reference, "
                         f"{cur_req.get(path, 0)} now")
    return lines


def main(argv: list[str]) -> int:
    from tests.support.fakes.launcher import start_fake_docs

    if len(argv) != 1:
        print("usage: python -m tests.support.docs_reference OUT.json", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="docs-reference-") as tmp:
        docs = start_fake_docs(Path(tmp) / "fake-docs", sites=SITES, pages=PAGES)
        try:
            recorded = record(Collector(Path(tmp) / "collector"), docs)
        finally:
            docs.stop()
    Path(argv[0]).write_text(json.dumps(recorded, indent=1) + "\n", encoding="utf-8")
    print(f"{len(recorded['items'])} items, {sum(recorded['requested'].values())} requests "
          f"-> {argv[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
