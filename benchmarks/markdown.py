"""``python -m benchmarks.markdown``: which HTML→Markdown conversion keeps a docs page (issue 18).

Every real page in tests/data/docs, converted by each contender:

- **walker** — ours (scraper/docpages/markdown.py) exactly as the spider runs it: the whole page
  parsed, its main content chosen, furniture skipped, converted.
- **markdownify** (BeautifulSoup) and **html2text** — given a head start: the same main content
  with the furniture already removed, so only the conversion is compared. markdownify gets ATX
  headings and a ``code_language_callback`` that reads the classes ours reads; html2text gets
  ``body_width=0`` (no re-wrapping) and ``mark_code``.
- **trafilatura** — ``extract(output_format="markdown")`` on the whole page: it chooses the
  main content itself.

Fidelity, summed over the pages (tests/support/docs_fixtures.py says what each page holds):
``<pre>``
blocks whose text is in the output at all (fenced or indented), found byte-exact as fenced
blocks, the same with the right language, tables kept with
their rows × columns, nested lists kept nested, headings all there in order; and whether a page
of 1,600 nested ``<div>``s (tests/support/fakes/hostile.py) converts at all. CPU: process time
per page, median of ``--repeat`` conversions, the contenders taking turns conversion by
conversion, and its ratio to the walker's in the same run.
A contender that is not installed is skipped with the reason printed
(``pip install -e '.[bench]'`` installs them all).

Per generator, on the pages of tests/data/generators (rustdoc, mdBook, GitBook, Javadoc, TypeDoc,
Doxygen, Antora…): the exact-code-block rate, each code block's code as a browser shows it
(tests/support/generator_pages.py reads it from the HTML) found byte-exact in a fenced block of the
output,
and CPU ms per page.
"""

from __future__ import annotations

import argparse
import copy
import importlib.metadata
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lxml.html
from parsel import Selector

from benchmarks.common import (
    default_results,
    describe_machine,
    fmt,
    format_table,
    machine_info,
    ratio,
    write_json,
)
from scraper.docpages.extract import MAIN_XPATHS, extract_page, is_boilerplate
from scraper.docpages.markdown import language_of
from scraper.docpages.readback import read_fences
from scraper.docpages.visible import INVISIBLE
from tests.support import docs_fixtures as fixtures
from tests.support import generator_pages
from tests.support.fakes.hostile import NESTED_DIVS, NESTED_TEXT, dense_page

PAGE_URL = "https://docs.example.org/guide/page.html"
Convert = Callable[[str], str]
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def main_content_html(html: str) -> str:
    """The page's main content as ours selects it, furniture removed: the libraries' input."""
    root = Selector(text=html).root  # parsel's parser: huge_tree, as the spider parses
    main = next(found[0] for xpath in MAIN_XPATHS if (found := root.xpath(xpath)))
    main = copy.deepcopy(main)
    doomed = [element for element in main.iter()
              if isinstance(element.tag, str) and element is not main
              and (element.tag in INVISIBLE or is_boilerplate(element))]
    for element in doomed:
        if element.getparent() is not None:
            element.drop_tree()  # keeps the text after it
    return lxml.html.tostring(main, encoding="unicode")


def walker(html: str) -> str:
    return extract_page(Selector(text=html), PAGE_URL).markdown


def markdownify_converter() -> Convert:
    from markdownify import markdownify

    def language(pre: Any) -> str:
        # The classes our walker reads, on the same elements: pre, its code, six ancestors.
        chain = [pre, pre.find("code"), *list(pre.parents)[:6]]
        return language_of(" ".join(tag.get("class") or []) for tag in chain if tag is not None)

    return lambda html: markdownify(html, heading_style="ATX", bullets="-",
                                    code_language_callback=language)


def html2text_converter() -> Convert:
    import html2text

    def convert(html: str) -> str:
        converter = html2text.HTML2Text(baseurl=PAGE_URL, bodywidth=0)
        converter.mark_code = True
        return converter.handle(html)

    return convert


def trafilatura_converter() -> Convert:
    import trafilatura

    return lambda html: trafilatura.extract(html, output_format="markdown", include_tables=True,
                                            include_formatting=True, include_links=True,
                                            favor_recall=True) or ""


CONTENDERS: dict[str, tuple[str, Callable[[], Convert], bool]] = {
    # name: (distribution, factory, takes the whole page)
    "walker": ("hubcollect", lambda: walker, True),
    "markdownify": ("markdownify", markdownify_converter, False),
    "html2text": ("html2text", html2text_converter, False),
    "trafilatura": ("trafilatura", trafilatura_converter, True),
}


def unescape(text: str) -> str:
    """CommonMark backslash escapes undone: ``build\\_ext`` is how some write ``build_ext``."""
    return _ESCAPED.sub(r"\1", text)


def code_kept(code: str, markdown: str) -> bool:
    """The code's text is in the Markdown in any form: fenced, or an indented code block."""
    indented = "\n".join(f"    {line}" if line else "" for line in code.split("\n"))
    return code in markdown or indented in markdown


def fidelity(fixture: fixtures.Fixture, html: str, markdown: str) -> dict[str, int]:
    expected_code = fixtures.pre_texts(html)
    found = fixtures.fenced_blocks(markdown)
    fenced = Counter(code for _, code in found)
    pairs = Counter(found)
    shapes = Counter()
    for table in fixtures.pipe_tables(markdown):
        rows = table[1:] if not any(table[0]) else table
        shapes[(len(rows), len(table[0]))] += 1
    headings = [line for line in fixtures.outside_code(markdown) if re.match(r"#{1,6} ", line)]
    return {
        "code_blocks": len(expected_code),
        "code_anywhere": sum(code in fenced or code_kept(code, markdown)
                             for code in expected_code),
        "code_exact": sum((fenced & Counter(expected_code)).values()),
        "code_with_language": sum(
            (pairs & Counter(zip(fixture.languages, expected_code, strict=True))).values()),
        "tables": len(fixtures.html_tables(html)),
        "tables_kept": sum((shapes & Counter(fixtures.html_tables(html))).values()),
        "nested_lists": int(fixture.nested is not None),
        "nested_kept": int(fixture.nested is not None
                           and fixture.nested in markdown.split("\n")),
        "headings_in_order": int(fixture.headings == [
            (len(h.split(" ", 1)[0]), unescape(h.split(" ", 1)[1].strip())) for h in headings]),
    }


def cpu_ms(work: dict[str, tuple[Convert, str]], repeat: int) -> dict[str, float]:
    """Median process time of one conversion per contender, ms. The contenders take turns,
    one conversion each, in a rotating order: load from elsewhere on the machine falls on all
    of them alike rather than on whichever ran while it lasted."""
    times: dict[str, list[float]] = {name: [] for name in work}
    names = list(work)
    for turn in range(repeat):
        for name in names[turn % len(names):] + names[:turn % len(names)]:
            convert, given = work[name]
            started = time.process_time()
            convert(given)
            times[name].append(time.process_time() - started)
    return {name: statistics.median(spent) * 1000 for name, spent in times.items()}


def survives(convert: Convert, html: str) -> str:
    """What converting a page of NESTED_DIVS nested ``<div>``s gives: its text, or the error."""
    try:
        return "text kept" if NESTED_TEXT in convert(html) else "text lost"
    except RecursionError:
        return "RecursionError"


Loaded = dict[str, tuple[str, Convert, bool]]  # name: (version, convert, takes the whole page)


def load_contenders(skipped: dict[str, str]) -> Loaded:
    loaded: Loaded = {}
    for name, (distribution, factory, whole_page) in CONTENDERS.items():
        try:
            convert = factory()
            version = (importlib.metadata.version(distribution)
                       if distribution != "hubcollect" else "ours")
        except ImportError as exc:
            skipped[name] = f"cannot import ({exc}): pip install {distribution}"
            continue
        loaded[name] = (version, convert, whole_page)
    return loaded


def generator_rates(loaded: Loaded, repeat: int) -> dict[str, dict[str, Any]]:
    """Per contender and generator page: code blocks, those byte-exact in a fenced block, CPU
    ms."""
    rates: dict[str, dict[str, Any]] = {name: {} for name in loaded}
    for page in generator_pages.PAGES:
        html = generator_pages.page_html(page)
        main = main_content_html(html)
        expected = Counter(generator_pages.code_texts(html))
        work = {name: (convert, html if whole_page else main)
                for name, (_, convert, whole_page) in loaded.items()}
        for name, ms in cpu_ms(work, repeat).items():
            convert, given = work[name]
            exact = sum((expected & Counter(read_fences(convert(given)))).values())
            rates[name][page.name] = {"generator": page.generator, "cpu_ms": ms,
                                      "code_blocks": sum(expected.values()), "code_exact": exact}
    return rates


def run(repeat: int) -> dict[str, Any]:
    pages = [(fixture, fixtures.fixture_html(fixture)) for fixture in fixtures.PAGES]
    inputs = {fixture.name: main_content_html(html) for fixture, html in pages}
    nested = dense_page("nested.html").decode()
    nested_main = main_content_html(nested)
    results: dict[str, Any] = {"contenders": {}, "skipped": {}}
    loaded = load_contenders(results["skipped"])
    per_page: dict[str, dict[str, Any]] = {name: {} for name in loaded}
    for fixture, html in pages:
        work = {name: (convert, html if whole_page else inputs[fixture.name])
                for name, (_, convert, whole_page) in loaded.items()}
        for name, ms in cpu_ms(work, repeat).items():
            convert, given = work[name]
            per_page[name][fixture.name] = {**fidelity(fixture, html, convert(given)),
                                            "cpu_ms": ms}
    generators = generator_rates(loaded, repeat)
    for name, (version, convert, whole_page) in loaded.items():
        pages_of = per_page[name]
        totals = {key: sum(page[key] for page in pages_of.values())
                  for key in next(iter(pages_of.values()))}
        totals["cpu_ms"] = totals["cpu_ms"] / len(pages_of)
        totals["nested_divs"] = survives(convert, nested if whole_page else nested_main)
        results["contenders"][name] = {"version": version, "pages": pages_of, "totals": totals,
                                       "generators": generators[name]}
    base = results["contenders"]["walker"]["totals"]["cpu_ms"]
    for contender in results["contenders"].values():
        contender["totals"]["cpu_vs_walker"] = ratio(contender["totals"]["cpu_ms"], base)
    return results


def table(results: dict[str, Any]) -> str:
    rows = []
    for name, contender in results["contenders"].items():
        t = contender["totals"]
        rows.append([f"{name} {contender['version']}",
                     f"{t['code_anywhere']}/{t['code_blocks']}",
                     f"{t['code_exact']}/{t['code_blocks']}",
                     f"{t['code_with_language']}/{t['code_blocks']}",
                     f"{t['tables_kept']}/{t['tables']}",
                     f"{t['nested_kept']}/{t['nested_lists']}",
                     f"{t['headings_in_order']}/{len(fixtures.PAGES)}",
                     t["nested_divs"], fmt(t["cpu_ms"], 1), fmt(t["cpu_vs_walker"], 2)])
    out = format_table(["contender", "code text kept", "fenced exact", "fenced+language",
                        "tables", "nested lists", "headings", f"{NESTED_DIVS} divs",
                        "CPU ms/page", "CPU vs walker"],
                       rows)
    for name, reason in results["skipped"].items():
        out += f"\n{name}: skipped, {reason}"
    return out


def generators_table(results: dict[str, Any]) -> str:
    """Exact code blocks and CPU ms per generator page, a column per contender."""
    names = list(results["contenders"])
    rows = []
    for page in generator_pages.PAGES:
        row = [page.generator]
        for name in names:
            rate = results["contenders"][name]["generators"][page.name]
            row.append(f"{rate['code_exact']}/{rate['code_blocks']}, {fmt(rate['cpu_ms'], 1)} ms")
        rows.append(row)
    totals = ["all"]
    for name in names:
        rates = results["contenders"][name]["generators"].values()
        cpu = statistics.mean(rate["cpu_ms"] for rate in rates)
        totals.append(f"{sum(r['code_exact'] for r in rates)}/"
                      f"{sum(r['code_blocks'] for r in rates)}, {fmt(cpu, 1)} ms")
    return format_table(["generator (exact code blocks, CPU ms/page)", *names], [*rows, totals])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="conversions per page (median)")
    parser.add_argument("--scale", choices=("full", "tiny"), default="full",
                        help="tiny: 2 repeats, results to markdown-tiny.json")
    parser.add_argument("--out", type=Path, help="results JSON (default benchmarks/results/)")
    args = parser.parse_args(argv)
    repeat = 2 if args.scale == "tiny" else args.repeat
    info = machine_info()
    results = {"machine": info, "command": " ".join(["python -m benchmarks.markdown",
                                                      *sys.argv[1:]]),
               "repeat": repeat, "pages": [page.name for page in fixtures.PAGES], **run(repeat)}
    out = args.out or default_results("markdown", args.scale)
    write_json(out, results)
    print(f"{len(fixtures.PAGES)} real docs pages, {repeat} conversions each; "
          f"{describe_machine(info)}")
    print(table(results))
    print(generators_table(results))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
