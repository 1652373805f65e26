"""CPU per page: ``scrapy crawl docs`` and ``scrapy crawl trending`` against plain Scrapy doing the
least each does, on the real pages the project has, side by side in one run.

    python -m benchmarks.pagecost                      # docs and trending, 8 copies, 3 rounds
    python -m benchmarks.pagecost --parts docs --copies 4 --repeat 1

The pages: every real documentation page of tests/data/docs and tests/data/generators (every
generator the project knows), and GitHub's real 2026 trending page, each served ``--copies``
times by the benchmark's nginx (``benchmarks/nginx.py``, pre-gzipped), every copy one comment
different so no store or dedup sees two alike (a docs copy's title is marked too: the content
hash would drop a page seen before). The contenders, each a process of its own:

- ``scrapy crawl docs``: the collector with its stores and pipelines, one start URL per page,
  ``max_pages_per_site: 1`` (the pages' own links would be 404s here) and no sitemaps;
- plain docs (``benchmarks/plain_floor.py docs``): fetch, ``lxml.html.fromstring``, title and
  text, a JSON line;
- ``scrapy crawl trending``: one language list per copy; plain trending: fetch, lxml parse, the
  rows as JSON lines.

CPU per page is the ``wait4`` CPU of a run with every copy less that of a run with one copy,
over the pages between them: start-up and close cancel out. Each round runs every contender
small then large; the figure is the median over rounds, and the ratio is against plain Scrapy
of the same rounds (the machine is shared: only ratios measured together mean anything).

Then the steps: each piece of a page's processing timed in this process (``time.process_time``)
over the same pages, in ms per page and as a share of the collector's CPU per page; what is left
is Scrapy's request/response path, the stores and pipelines, and the engine.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import (
    BENCH_SCRAPY_SETTINGS,
    CONTENDER_NICE,
    PYTHON,
    REPO_ROOT,
    can_raise_priority,
    collector_env,
    default_results,
    describe_machine,
    fmt,
    format_table,
    machine_info,
    plain_env,
    publish,
    ratio,
)

DOCS_DIRS = (REPO_ROOT / "tests" / "data" / "docs", REPO_ROOT / "tests" / "data" / "generators")
TRENDING_PAGE = REPO_ROOT / "tests" / "data" / "github" / "trending" / "2026-04_python_daily.html"
TRENDING_COPIES_PER_DOCS_COPY = 6
TARGET = 1.5
LAST_MODIFIED = "Mon, 07 Dec 2026 10:00:00 GMT"
"""What nginx sends with each static page: the crawl reads its date from there, not the page."""
_TITLE_TAG = re.compile(rb"<title[^>]*>")


def docs_pages() -> list[Path]:
    return sorted(path for directory in DOCS_DIRS for path in directory.glob("*.html"))


def marked(body: bytes, copy: int, title: bool) -> bytes:
    """``body`` made one copy's own: a comment first, and with ``title`` a mark in <title>."""
    body = f"<!-- copy {copy} -->\n".encode() + body
    if title:
        body = _TITLE_TAG.sub(lambda m: m.group(0) + f"{copy} ".encode(), body, count=1)
    return body


def write_file(www: Path, url_path: str, body: bytes) -> None:
    target = www / url_path.strip("/") / "index.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(body)
    target.with_name("index.html.gz").write_bytes(gzip.compress(body, compresslevel=6, mtime=0))


def write_pages(www: Path, copies: int) -> tuple[list[list[str]], list[list[str]]]:
    """The docs paths and trending languages of each copy (copy 0 first)."""
    docs: list[list[str]] = []
    trending: list[list[str]] = []
    bodies = [(path.stem, path.read_bytes()) for path in docs_pages()]
    trending_body = TRENDING_PAGE.read_bytes()
    for copy in range(copies):
        docs.append([])
        for stem, body in bodies:
            url_path = f"/pages/c{copy}/{stem}/"
            write_file(www, url_path, marked(body, copy, title=True))
            docs[-1].append(url_path)
        trending.append([])
        for k in range(TRENDING_COPIES_PER_DOCS_COPY):
            language = f"bench{copy}x{k}"
            write_file(www, f"/trending/{language}/", marked(trending_body, copy * 10 + k, False))
            trending[-1].append(language)
    for directory in [www, *[p for p in www.rglob("*") if p.is_dir()]]:
        directory.chmod(0o755)
    return docs, trending


# --- contenders ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Contender:
    name: str
    kind: str  # docs | trending
    plain: bool


CONTENDERS = (Contender("scrapy crawl docs", "docs", False),
              Contender("plain Scrapy (docs)", "docs", True),
              Contender("scrapy crawl trending", "trending", False),
              Contender("plain Scrapy (trending)", "trending", True))


def collector_config(home: Path, server: str, kind: str, entries: list[str]) -> Path:
    from benchmarks.distributed import write_config
    from benchmarks.hostile import GENEROUS

    if kind == "docs":
        # GitHub stays where it is (github.com, never asked): a docs site is not GitHub, and on
        # GitHub's origin every page would draw on its request budget, as it must there.
        spider = {"weight": 1, "start_urls": [server + e for e in entries],
                  "max_pages_per_site": 1, "sitemaps": False,
                  "settings": dict(BENCH_SCRAPY_SETTINGS)}
        return write_config(home, {kind: spider})
    spider = {"weight": 1, "languages": entries, "periods": ["daily"],
              "settings": dict(BENCH_SCRAPY_SETTINGS)}
    return write_config(home, {kind: spider}, github={
        "web_url": server, "api_url": f"{server}/api", "web_min_interval": 0,
        "limits": GENEROUS})


def count_lines(paths: list[Path]) -> int:
    return sum(path.read_bytes().count(b"\n") for path in paths if path.exists())


def run_once(contender: Contender, server: str, entries: list[str], work: Path) -> dict[str, Any]:
    """One run over ``entries``: CPU seconds, pages parsed, items written."""
    from benchmarks.common import run_measured

    work.mkdir(parents=True)
    nice = 0 if can_raise_priority() else CONTENDER_NICE
    if contender.plain:
        urls = [server + e if contender.kind == "docs" else f"{server}/trending/{e}?since=daily"
                for e in entries]
        (work / "urls.txt").write_text("\n".join(urls) + "\n", encoding="utf-8")
        feed = work / "feed.jsonl"
        argv = [PYTHON, "-m", "benchmarks.plain_floor", contender.kind, "--feed", str(feed),
                "--urls-file", str(work / "urls.txt")]
        measured = run_measured(argv, cwd=REPO_ROOT, env=plain_env(), log=work / "log.txt",
                                nice=nice)
        items = count_lines([feed])
    else:
        config = collector_config(work / "home", server, contender.kind, entries)
        argv = [PYTHON, "-m", "scrapy", "crawl", contender.kind]
        measured = run_measured(argv, cwd=REPO_ROOT, env=collector_env(config),
                                log=work / "log.txt", nice=nice)
        items = count_lines(sorted((work / "home" / "data" / "items" / contender.kind)
                                   .glob("*.jsonl*")))
    if measured.returncode != 0:
        tail = (work / "log.txt").read_text(errors="replace")[-1500:]
        raise RuntimeError(f"{contender.name} exited {measured.returncode}:\n{tail}")
    return {"pages": len(entries), "items": items, "cpu_s": round(measured.cpu_s, 3),
            "wall_s": round(measured.wall_s, 3), "peak_pss_mb": measured.peak_pss_mb}


def per_page_ms(small: dict[str, Any], large: dict[str, Any]) -> float:
    return 1000 * (large["cpu_s"] - small["cpu_s"]) / (large["pages"] - small["pages"])


# --- steps, in this process ----------------------------------------------------------------------


def timed(step: Callable[[Any], Any], inputs: list[Any], repeat: int) -> float:
    """ms of CPU per input of ``step``, the best of ``repeat`` passes over ``inputs``."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        for value in inputs:
            step(value)
        best = min(best, time.process_time() - started)
    return 1000 * best / len(inputs)


def docs_steps(repeat: int = 7) -> dict[str, float]:
    """ms per page of each step of a docs page, on the real pages, each step on the previous
    step's output (the steps the spider's callback and pipelines run, in their order)."""

    from pipelines.itemstore import json_line
    from scraper.docpages import extract
    from scraper.docpages.fidelity import check
    from scraper.docpages.markdown import convert
    from scraper.items import DocPageItem, content_hash
    from scraper.settings import DOCS_MAX_ELEMENTS
    from scraper.utils.bounds import elements_over

    pages = [(path.read_bytes(), f"http://docs.test/pages/{path.stem}/") for path in docs_pages()]
    texts = [(body.decode("utf-8", errors="replace"), url) for body, url in pages]
    # The spider's own tree (plain lxml elements) and the header nginx sends with every file: a
    # step timed on another tree, or on a page without Last-Modified, is not the crawl's step.
    selectors = [(extract.page_selector(text), url) for text, url in texts]
    mains = [(extract.main_content(sel), sel, url) for sel, url in selectors]
    converted = [(convert(main, extract.base_url(sel, url), skip=extract.is_boilerplate), main)
                 for main, sel, url in mains if main is not None]
    items = []
    for sel, url in selectors:
        page = extract.extract_page(sel, url, LAST_MODIFIED)
        items.append(DocPageItem(url=url, title=page.title, headings=page.headings,
                                 text=page.text, markdown=page.markdown,
                                 canonical_url=page.canonical_url, lang=page.lang,
                                 last_modified=page.last_modified, version=page.version,
                                 spider="docs", shard="0/1", collected_at="2026-01-01T00:00:00Z",
                                 **page.fidelity.fields()))

    def metadata(value: tuple[Any, str]) -> None:
        sel, url = value
        extract._TITLE(sel.root)
        extract.canonical_url(sel, url)
        extract.page_lang(sel)
        extract.last_modified(sel, LAST_MODIFIED)
        extract.page_version(sel, url)
        extract.main_content(sel)

    def stamped(item: Any) -> bytes:
        item["content_hash"] = content_hash(item)
        return json_line(item)

    return {
        "bounds and decoding (element count, bytes to text)": timed(
            lambda p: (elements_over(p[0], DOCS_MAX_ELEMENTS),
                       p[0].decode("utf-8", errors="replace")), pages, repeat),
        "parse (lxml tree)": timed(lambda t: extract.page_selector(t[0]), texts, repeat),
        "content selection and metadata": timed(metadata, selectors, repeat),
        "Markdown and text (one walk)": timed(
            lambda m: convert(m[0], extract.base_url(m[1], m[2]), skip=extract.is_boilerplate),
            [m for m in mains if m[0] is not None], repeat) * len(converted) / len(pages),
        "fidelity check": timed(lambda c: check(c[1], c[0].markdown, skip=extract.is_boilerplate),
                                converted, repeat) * len(converted) / len(pages),
        "links to follow": timed(lambda s: list(extract.follow_links(s[0], s[1], s[1])),
                                 selectors, repeat),
        "content hash and item write (JSON line)": timed(stamped, items, repeat),
    }


def trending_steps(repeat: int = 7) -> dict[str, float]:
    from pipelines.itemstore import json_line
    from scraper.items import content_hash
    from scraper.trending.archive import body_sha256
    from scraper.trending.pages import page_item, read_rows, row_items, snapshot_of
    from scraper.trending.repositories import parse_trending

    body = TRENDING_PAGE.read_bytes()
    url = "https://github.com/trending/python?since=daily"
    rows, _ = read_rows(parse_trending, body, "utf-8", "https://github.com", 26, 150_000)

    def items(_: Any) -> list[Any]:
        snapshot = snapshot_of("repositories", rows)
        made = [page_item("repositories", observed_at="t", period="daily", language="python",
                          spoken="", url=url, rows=snapshot, archive_sha256="0", parser_version="1",
                          parsed_at="t"),
                *row_items("repositories", rows, "daily", "python", "")]
        for item in made:
            item.update(spider="trending", shard="0/1", collected_at="t")
        return made

    made = items(None)

    def write(_: Any) -> None:
        for item in made:
            item["content_hash"] = content_hash(item)
            json_line(item)

    inputs = [None] * 10
    return {
        "parse and rows (lxml, the parser)": timed(
            lambda _: read_rows(parse_trending, body, "utf-8", "https://github.com", 26,
                                150_000), inputs, repeat),
        "items (snapshot, rows)": timed(items, inputs, repeat),
        "archive hash (sha256 of the body)": timed(lambda _: body_sha256(body), inputs, repeat),
        "content hashes and item write (JSON lines)": timed(write, inputs, repeat),
    }


# --- the run -------------------------------------------------------------------------------------


def measure(args: argparse.Namespace, kinds: list[str]) -> dict[str, Any]:
    from benchmarks.nginx import Nginx

    work = Path(tempfile.mkdtemp(prefix="hubcollect-pagecost-"))
    rounds: list[dict[str, Any]] = []
    try:
        with Nginx(work / "nginx", 1, 1, 6.0) as nginx:
            docs, trending = write_pages(work / "nginx" / "www", args.copies)
            entries = {"docs": docs, "trending": trending}
            for r in range(args.repeat):
                runs: dict[str, Any] = {}
                for contender in CONTENDERS:
                    if contender.kind not in kinds:
                        continue
                    copies = entries[contender.kind]
                    small = run_once(contender, nginx.url, copies[0],
                                     work / f"r{r}" / contender.name.replace(" ", "_") / "small")
                    large = run_once(contender, nginx.url, [e for c in copies for e in c],
                                     work / f"r{r}" / contender.name.replace(" ", "_") / "large")
                    runs[contender.name] = {"small": small, "large": large,
                                            "ms_per_page": round(per_page_ms(small, large), 3)}
                    print(f"round {r + 1}: {contender.name}: "
                          f"{runs[contender.name]['ms_per_page']:.2f} ms/page "
                          f"({large['pages']} pages, {large['items']} items)", flush=True)
                rounds.append(runs)
    finally:
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    results: dict[str, Any] = {"machine": machine_info(), "copies": args.copies,
                               "repeat": args.repeat, "rounds": rounds, "contenders": {}}
    for contender in CONTENDERS:
        values = [runs[contender.name]["ms_per_page"] for runs in rounds
                  if contender.name in runs]
        if values:
            results["contenders"][contender.name] = {"kind": contender.kind,
                                                     "plain": contender.plain,
                                                     "ms_per_page": round(
                                                         statistics.median(values), 3)}
    ratios = []
    for runs in rounds:  # the ratio of each round, then their median
        for kind in kinds:
            ours, plain = CONTENDERS[0 if kind == "docs" else 2], CONTENDERS[1 if kind == "docs"
                                                                                else 3]
            value = ratio(runs[ours.name]["ms_per_page"], runs[plain.name]["ms_per_page"])
            ratios.append((kind, value))
    results["ratios"] = {kind: round(statistics.median(v for k, v in ratios
                                                       if k == kind and v is not None), 2)
                         for kind in kinds}
    passes = 7 if args.repeat > 1 else 1
    if "docs" in kinds:
        results["docs_steps"] = {k: round(v, 3) for k, v in docs_steps(passes).items()}
    if "trending" in kinds:
        results["trending_steps"] = {k: round(v, 3) for k, v in trending_steps(passes).items()}
    return results


def steps_table(steps: dict[str, float], total: float | None) -> str:
    rows = [[name, fmt(ms, 2), fmt(100 * ms / total if total else None, 0) + " %"]
            for name, ms in steps.items()]
    if total:
        rest = total - sum(steps.values())
        rows.append(["Scrapy's request/response path, stores, pipelines, engine (the rest)",
                     fmt(rest, 2), fmt(100 * rest / total, 0) + " %"])
    return format_table(["step", "ms/page", "share"], rows)


def render(results: dict[str, Any]) -> str:
    contenders = results["contenders"]
    out = [f"CPU per page, start-up excluded: {results['copies']} copies of each page, median "
           f"of {results['repeat']} rounds; {describe_machine(results['machine'])}"]
    rows = []
    for name, values in contenders.items():
        plain = "plain Scrapy (docs)" if values["kind"] == "docs" else "plain Scrapy (trending)"
        base = contenders.get(plain, {}).get("ms_per_page")
        rows.append([name, fmt(values["ms_per_page"], 2),
                     "1.00×" if values["plain"] else
                     f"{fmt(results['ratios'].get(values['kind']), 2)}× (target ≤ {TARGET}×)"
                     if base else "—"])
    out.append(format_table(["contender", "CPU ms/page", "vs plain Scrapy"], rows))
    for kind, ours in (("docs", "scrapy crawl docs"), ("trending", "scrapy crawl trending")):
        steps = results.get(f"{kind}_steps")
        if steps:
            total = contenders.get(ours, {}).get("ms_per_page")
            out.append(f"\n{ours}: where a page's CPU goes (steps timed in-process; "
                       "share of the crawl's CPU per page)")
            out.append(steps_table(steps, total))
    return "\n".join(out)


def render_comparison(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Per step and per contender, two runs side by side (each step's ms and share of its own
    run's crawl, each ratio against the plain Scrapy of its own run)."""
    out = ["contender                 before ms/page  × plain  after ms/page  × plain"]
    for name, values in after["contenders"].items():
        old = before["contenders"].get(name, {})
        kind = values["kind"]
        out.append(f"{name:24s}  {fmt(old.get('ms_per_page'), 2):>14s}  "
                   f"{'1.00' if values['plain'] else fmt(before['ratios'].get(kind), 2):>7s}  "
                   f"{fmt(values['ms_per_page'], 2):>12s}  "
                   f"{'1.00' if values['plain'] else fmt(after['ratios'].get(kind), 2):>7s}")
    for kind, ours in (("docs", "scrapy crawl docs"), ("trending", "scrapy crawl trending")):
        steps_after, steps_before = after.get(f"{kind}_steps"), before.get(f"{kind}_steps")
        if not steps_after or not steps_before:
            continue
        rows = []
        totals = (before["contenders"][ours]["ms_per_page"],
                  after["contenders"][ours]["ms_per_page"])
        for name in steps_after:
            rows.append([name, fmt(steps_before.get(name), 2), fmt(steps_after[name], 2)])
        rests = [total - sum(steps.values())
                 for total, steps in zip(totals, (steps_before, steps_after), strict=True)]
        rows.append(["the rest (Scrapy, stores, pipelines, engine)", fmt(rests[0], 2),
                     fmt(rests[1], 2)])
        rows.append([f"{ours}, CPU per page", fmt(totals[0], 2), fmt(totals[1], 2)])
        out.append(f"\n{ours}: ms per page, before and after")
        out.append(format_table(["step", "before", "after"], rows))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pagecost",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="docs,trending", help="docs, trending or both")
    parser.add_argument("--copies", type=int, default=8, help="copies of each page (≥ 2)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the median is kept")
    parser.add_argument("--scale", choices=("tiny", "full"), default="full",
                        help="tiny: 2 copies, 1 round (a smoke run)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"),
                        help="print two results files side by side, step by step; no run")
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (json.loads(path.read_text(encoding="utf-8")) for path in args.compare)
        print(render_comparison(before, after))
        return 0
    if args.scale == "tiny":
        args.copies, args.repeat = 2, 1
    kinds = [k.strip() for k in args.parts.split(",") if k.strip()]
    if not kinds or set(kinds) - {"docs", "trending"} or args.copies < 2 or args.repeat < 1:
        parser.error("--parts: docs and/or trending; --copies ≥ 2; --repeat ≥ 1")
    results = measure(args, kinds)
    return publish(args.out or default_results("pagecost", args.scale), results, render)


if __name__ == "__main__":
    raise SystemExit(main())
