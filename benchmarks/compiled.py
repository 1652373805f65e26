"""The docs page's walks compiled with mypyc against the same modules run by the interpreter, in
one run: what compiling ``scraper/docpages/`` buys per page, and that it writes the same pages.

    python -m benchmarks.compiled               # build, then 3 alternations of 15 passes (~2 min)
    python -m benchmarks.compiled --repeat 1 --passes 3

The build: the project's ``scraper`` package copied to a work directory and
:data:`COMPILED_MODULES` compiled there by mypyc (shipped with mypy; the project's own mypy
settings), nothing installed. Then each version runs in a process of its own (``PYTHONPATH``
chooses the copy, and the process says which file it loaded), the two alternated ``--repeat``
times: every step of a docs page that these modules run, timed with ``time.process_time`` as
``benchmarks.pagecost`` times its steps (best of ``--passes`` passes over the 32 real pages of
tests/data/docs and tests/data/generators). Each process also hashes what it wrote for every
page (the ``DocPage`` and the links to follow): the two versions must hash the same.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    PYTHON,
    REPO_ROOT,
    child_json,
    default_results,
    describe_machine,
    fmt,
    format_table,
    machine_info,
    median_steps,
    publish,
)

COMPILED_MODULES = ("markdown", "readback", "shown", "visible", "fidelity", "tables", "tabs",
                    "callouts", "extract")
"""The modules of ``scraper/docpages/`` a docs page's extraction runs, every one of them."""
STEPS = ("extract_page (all of it)", "Markdown and text (one walk)", "fidelity check",
         "content selection and metadata", "links to follow")


def build(into: Path, modules: list[str]) -> Path:
    """The ``scraper`` package with ``modules`` of ``scraper/docpages/`` compiled in place, under
    ``into``."""
    shutil.copytree(REPO_ROOT / "scraper", into / "scraper",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    shutil.copy(REPO_ROOT / "pyproject.toml", into / "pyproject.toml")
    sources = [f"scraper/docpages/{name}.py" for name in modules]
    done = subprocess.run([PYTHON, "-m", "mypyc", *sources], cwd=into, capture_output=True,
                          text=True, check=False)
    if done.returncode:
        raise SystemExit(f"mypyc failed ({done.returncode}):\n{done.stdout[-3000:]}"
                         f"{done.stderr[-3000:]}")
    return into


def child(passes: int, modules: list[str]) -> dict[str, Any]:
    """In the process ``PYTHONPATH`` chose: the files ``modules`` were loaded from, each step's ms
    per page and a hash of the pages."""
    loaded = {name: importlib.import_module(f"scraper.docpages.{name}").__file__ or ""
              for name in modules}
    from benchmarks.pagecost import docs_pages, timed
    from scraper.docpages import extract
    from scraper.docpages.fidelity import check
    from scraper.docpages.markdown import convert

    pages = [(path.read_bytes().decode("utf-8", errors="replace"),
              f"http://docs.test/pages/{path.stem}/") for path in docs_pages()]
    selectors = [(extract.page_selector(text), url) for text, url in pages]
    mains = [(main, sel, url) for sel, url in selectors
             if (main := extract.main_content(sel)) is not None]
    converted = [(convert(main, extract.base_url(sel, url), skip=extract.is_boilerplate), main)
                 for main, sel, url in mains]
    digest = hashlib.sha256()
    for sel, url in selectors:
        page = extract.extract_page(sel, url)
        links = list(extract.follow_links(sel, url, url.rsplit("/", 2)[0] + "/"))
        digest.update(repr((page, links)).encode())

    def metadata(value: tuple[Any, str]) -> None:
        sel, url = value
        extract.canonical_url(sel, url)
        extract.page_lang(sel)
        extract.last_modified(sel, None)
        extract.page_version(sel, url)
        extract.main_content(sel)

    share = len(converted) / len(pages)  # the walks' figures are per page, as pagecost's
    steps = {
        STEPS[0]: timed(lambda s: extract.extract_page(s[0], s[1]), selectors, passes),
        STEPS[1]: timed(lambda m: convert(m[0], extract.base_url(m[1], m[2]),
                                          skip=extract.is_boilerplate), mains, passes) * share,
        STEPS[2]: timed(lambda c: check(c[1], c[0].markdown, skip=extract.is_boilerplate),
                        converted, passes) * share,
        STEPS[3]: timed(metadata, selectors, passes),
        STEPS[4]: timed(lambda s: list(extract.follow_links(s[0], s[1], s[1])), selectors,
                        passes),
    }
    return {"loaded": loaded,
            "compiled": [name for name, path in loaded.items() if not path.endswith(".py")],
            "pages": len(pages), "items_sha256": digest.hexdigest(),
            "steps": {name: round(ms, 3) for name, ms in steps.items()}}


def run_child(path: Path, passes: int, modules: list[str]) -> dict[str, Any]:
    return child_json("benchmarks.compiled", path,
                      ["--passes", str(passes), "--modules", ",".join(modules)])


def measure(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="hubcollect-compiled-"))
    try:
        started = time.monotonic()
        compiled_tree = build(work, args.modules)
        build_s = round(time.monotonic() - started, 1)
        print(f"mypyc build: {build_s} s", flush=True)
        runs: dict[str, list[dict[str, Any]]] = {"pure": [], "compiled": []}
        for r in range(args.repeat):
            for version, path in (("pure", REPO_ROOT), ("compiled", compiled_tree)):
                run = run_child(path, args.passes, args.modules)
                if run["compiled"] != (args.modules if version == "compiled" else []):
                    raise SystemExit(f"the {version} process loaded {run['loaded']}")
                runs[version].append(run)
                print(f"round {r + 1}: {version}: extract_page "
                      f"{run['steps'][STEPS[0]]:.2f} ms/page", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    hashes = {run["items_sha256"] for version in runs.values() for run in version}
    return {"machine": machine_info(), "repeat": args.repeat, "passes": args.passes,
            "modules": args.modules, "build_s": build_s,
            "pages": runs["pure"][0]["pages"], "identical": len(hashes) == 1,
            "runs": runs,
            "steps": median_steps(runs, STEPS)}


def render(results: dict[str, Any]) -> str:
    pure, compiled = results["steps"]["pure"], results["steps"]["compiled"]
    rows = [[step, fmt(pure[step], 2), fmt(compiled[step], 2),
             f"{100 * (compiled[step] - pure[step]) / pure[step]:+.0f} %",
             fmt(pure[step] - compiled[step], 2)] for step in STEPS]
    return "\n".join([
        f"{results['pages']} docs pages, {results['passes']} passes (best) per process, median of "
        f"{results['repeat']} alternations; mypyc build of {len(results['modules'])} modules "
        f"{results['build_s']} s; "
        f"{describe_machine(results['machine'])}",
        format_table(["step, ms per page", "interpreted", "compiled", "change", "saved"], rows),
        "pages and links written: " + ("identical" if results["identical"] else "DIFFERENT"),
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compiled",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="alternations; the median is kept")
    parser.add_argument("--passes", type=int, default=15, help="passes per process; the best")
    parser.add_argument("--modules", default=",".join(COMPILED_MODULES),
                        help="the modules of scraper/docpages/ to compile, comma-separated")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.modules = [name.strip() for name in args.modules.split(",") if name.strip()]
    if args.repeat < 1 or args.passes < 1 or not args.modules or \
            set(args.modules) - set(COMPILED_MODULES):
        parser.error(f"--repeat and --passes: at least 1; --modules: of {COMPILED_MODULES}")
    if args.child:
        print(json.dumps(child(args.passes, args.modules)))
        return 0
    results = measure(args)
    full = args.modules == list(COMPILED_MODULES)
    code = publish(args.out or default_results("compiled", "full" if full else "tiny"), results,
                   render)
    return code if results["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
