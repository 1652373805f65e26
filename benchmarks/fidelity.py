"""The docs page's fidelity check, this tree against another version of it, in one run: what a
change to the check buys per page, and that it reads every page the same.

    python -m benchmarks.fidelity --before 98eece7               # 5 alternations, 7 passes (~25 s)
    python -m benchmarks.fidelity --before 98eece7 --repeat 1 --passes 1 --pages 3   # a smoke run

``--before``: a git revision (its ``scraper`` package, extracted to a work directory) or a
directory holding a copy of the project. Each version runs in a process of its own
(``PYTHONPATH`` chooses the tree, and the process says which file it loaded), the two
alternated ``--repeat`` times: on the 32 real pages of tests/data/docs and tests/data/generators
(the tree by ``extract.page_selector``, ``extract.main_content``, the Markdown by
``markdown.convert``), ``fidelity.check`` and its two halves, ``shown.read_shown`` and
``readback.read``, timed with ``time.process_time`` as ``benchmarks.pagecost`` times its steps
(best of ``--passes`` passes, ms per page; ``--pages``: the first pages only). Each process
hashes what the check read of every page (the shown reading, the Markdown read back, the
fidelity record): the two versions must hash the same.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import (
    REPO_ROOT,
    child_json,
    default_results,
    describe_machine,
    fmt,
    format_table,
    machine_info,
    median_steps,
    publish,
    source_tree,
)
from benchmarks.pagecost import docs_pages

STEPS = ("fidelity check", "what the page shows (shown.read_shown)",
         "the Markdown read back (readback.read)")
VERSIONS = ("before", "after")


def child(passes: int, count: int) -> dict[str, Any]:
    """In the process ``PYTHONPATH`` chose: the file the check was loaded from, each step's ms
    per page and a hash of what the check read."""
    from benchmarks.pagecost import timed
    from scraper.docpages import extract, fidelity, readback, shown
    from scraper.docpages.markdown import convert

    pages = docs_pages()[:count]
    pairs = []
    for path in pages:
        selector = extract.page_selector(path.read_bytes().decode("utf-8", errors="replace"))
        main = extract.main_content(selector)
        if main is not None:
            page = convert(main, f"http://docs.test/pages/{path.stem}/",
                           skip=extract.is_boilerplate)
            pairs.append((main, page.markdown))
    skip = extract.is_boilerplate
    readings = [(shown.read_shown(main, skip), markdown) for main, markdown in pairs]
    digest = hashlib.sha256()
    for (main, markdown), (seen, _) in zip(pairs, readings, strict=True):
        back = readback.read(markdown)
        digest.update(repr((seen, back.codes, back.plain, back.tables, back.labels, back.quotes,
                            back.quote_heads, fidelity.check(main, markdown, skip=skip))
                           ).encode())
    share = len(pairs) / len(pages)  # per page of the 32, as pagecost's steps
    steps = {
        STEPS[0]: timed(lambda p: fidelity.check(p[0], p[1], skip=skip), pairs, passes),
        STEPS[1]: timed(lambda p: shown.read_shown(p[0], skip), pairs, passes),
        STEPS[2]: timed(lambda r: readback.read(r[1], prose=bool(
            r[0].tabs or r[0].tables or r[0].callouts)), readings, passes),
    }
    return {"loaded": fidelity.__file__ or "", "pages": len(pages),
            "read_sha256": digest.hexdigest(),
            "steps": {name: round(ms * share, 3) for name, ms in steps.items()}}


def run_child(tree: Path, passes: int, pages: int) -> dict[str, Any]:
    result = child_json("benchmarks.fidelity", tree,
                        ["--passes", str(passes), "--pages", str(pages)])
    expected = tree / "scraper" / "docpages" / "fidelity.py"
    if Path(result["loaded"]).resolve() != expected.resolve():
        raise SystemExit(f"the process for {tree} loaded {result['loaded']}")
    return result


def measure(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="hubcollect-fidelity-"))
    try:
        trees = {"before": source_tree(args.before, ["scraper"], work), "after": REPO_ROOT}
        runs: dict[str, list[dict[str, Any]]] = {version: [] for version in VERSIONS}
        for r in range(args.repeat):
            for version in VERSIONS:
                run = run_child(trees[version], args.passes, args.pages)
                runs[version].append(run)
                print(f"round {r + 1}: {version}: fidelity check "
                      f"{run['steps'][STEPS[0]]:.2f} ms/page", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    hashes = {run["read_sha256"] for version in runs.values() for run in version}
    return {"machine": machine_info(), "before": args.before, "repeat": args.repeat,
            "passes": args.passes, "pages": runs["after"][0]["pages"],
            "identical": len(hashes) == 1, "runs": runs,
            "steps": median_steps(runs, STEPS)}


def render(results: dict[str, Any]) -> str:
    before, after = results["steps"]["before"], results["steps"]["after"]
    rows = [[step, fmt(before[step], 2), fmt(after[step], 2),
             f"{100 * (after[step] - before[step]) / before[step]:+.0f} %"] for step in STEPS]
    return "\n".join([
        f"{results['pages']} docs pages, {results['passes']} passes (best) per process, median of "
        f"{results['repeat']} alternations; before: {results['before']}; "
        f"{describe_machine(results['machine'])}",
        format_table(["step, ms per page", "before", "after", "change"], rows),
        "what the check read: " + ("identical" if results["identical"] else "DIFFERENT"),
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fidelity",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--before", default="HEAD",
                        help="a git revision or a project directory to hold this tree against")
    parser.add_argument("--repeat", type=int, default=5, help="alternations; the median is kept")
    parser.add_argument("--passes", type=int, default=7, help="passes per process; the best")
    parser.add_argument("--pages", type=int, default=len(docs_pages()),
                        help="the first pages of the 32 (a smoke run)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.passes < 1 or not 1 <= args.pages <= len(docs_pages()):
        parser.error(f"--repeat and --passes: at least 1; --pages: 1 to {len(docs_pages())}")
    if args.child:
        print(json.dumps(child(args.passes, args.pages)))
        return 0
    results = measure(args)
    full = args.repeat >= 5 and args.passes >= 7 and args.pages == len(docs_pages())
    code = publish(args.out or default_results("fidelity", "full" if full else "tiny"), results,
                   render)
    return code if results["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
