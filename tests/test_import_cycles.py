"""No import cycle among the project's modules, counting imports inside functions and typing-only
ones: a cycle hidden behind a function-local import or ``if TYPE_CHECKING:`` is still two modules
that cannot be understood (or type-checked) apart."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.collector import REPO_ROOT

PACKAGES = ("scraper", "runner", "spiders", "pipelines")


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, here: str, is_package: bool, modules: set[str]) -> set[str]:
    """The project modules ``tree`` imports anywhere."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = here.split(".") if is_package else here.split(".")[:-1]
                package = package[:len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in modules else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {name for name in found if name in modules and name != here}


def import_graph() -> dict[str, set[str]]:
    paths = [p for package in PACKAGES for p in (REPO_ROOT / package).rglob("*.py")]
    modules = {module_name(p): p for p in paths}
    return {name: imported(ast.parse(path.read_text(encoding="utf-8")), name,
                           path.name == "__init__.py", set(modules))
            for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_cycle_finder_finds_function_local_and_typing_only_cycles() -> None:
    a = ast.parse("def f():\n    from pkg import b\n")
    b = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.c\n"
                  "import pkg.a\n")
    modules = {"pkg", "pkg.a", "pkg.b", "pkg.c"}
    graph = {"pkg.a": imported(a, "pkg.a", False, modules),
             "pkg.b": imported(b, "pkg.b", False, modules), "pkg.c": set(), "pkg": set()}
    graph["pkg.c"] = imported(ast.parse("import pkg.b\n"), "pkg.c", False, modules)
    assert graph["pkg.b"] == {"pkg.a", "pkg.c"}  # the typing-only import is an edge too
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []
