"""KubeSim's modules import each other at the top and without cycles.

The layers themselves are an import-linter contract (pyproject.toml, ``lint-imports``); this
checks what makes them honest: no module reaches another through an import cycle (a
strongly connected component of grimp's graph, TYPE_CHECKING imports included), and no
KubeSim module imports another inside a function or under ``if TYPE_CHECKING:``, the two
ways a cycle hides from a reader. Imports of optional third-party packages inside a
function (``cryptography``, ``kubernetes_asyncio``) are fine: they are not KubeSim's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

import kubesim

SOURCE = Path(kubesim.__file__).parent


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in modules), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    imported = sorted(graph.find_modules_directly_imported_by(child))
                    work.append((child, iter(imported)))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_cycles_between_modules() -> None:
    graph = grimp.build_graph("kubesim")
    modules = {m for m in graph.modules if m.startswith("kubesim")}
    assert _cycles(graph, modules) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=a, imported=b)
    assert _cycles(graph, {"p.a", "p.b", "p.c", "p.d"}) == [["p.a", "p.b", "p.c"]]


def _hidden_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module) of every import of a KubeSim module that is not at the top level."""
    hidden: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom) or node in tree.body:
            continue
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        hidden += [(node.lineno, n) for n in names if n.split(".")[0] == "kubesim"]
    return hidden


def test_kubesim_modules_are_imported_at_the_top() -> None:
    found = [
        f"{path.relative_to(SOURCE)}:{line}: {module}"
        for path in sorted(SOURCE.rglob("*.py"))
        for line, module in _hidden_imports(ast.parse(path.read_text()))
    ]
    assert found == []


def test_the_top_level_check_finds_a_hidden_import() -> None:
    tree = ast.parse(
        "import json\n"
        "from kubesim.errors import KubeSimError\n"
        "def f():\n    from kubesim.registry import store\n"
        "if TYPE_CHECKING:\n    import kubesim.storage.mvcc\n"
        "def g():\n    from cryptography import x509\n"
    )
    assert _hidden_imports(tree) == [(4, "kubesim.registry"), (6, "kubesim.storage.mvcc")]
