"""No import cycles in `solar`, function-level and ``TYPE_CHECKING`` imports included.

A cycle hidden behind an import inside a function still makes two modules one unit
(neither can be read, tested or moved without the other); this reads every ``import``
statement of every module with `ast`, wherever it stands, and fails on any strongly
connected component of more than one module. An import names the module it reads
(``from solar.ir import nodes`` reads ``solar.ir.nodes``; ``from solar.ir import
Program`` reads ``solar.ir``), not the packages above it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

SOLAR = Path(__file__).resolve().parents[2] / "solar"



def _modules(root: Path) -> dict[str, Path]:
    out = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: Mapping[str, Path]) -> Iterator[str]:
    """The `solar` modules ``name`` imports, anywhere in its body."""

    def known(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [known(a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else known(base)
                       for a in node.names]
        else:
            continue
        yield from (t for t in targets if t is not None and t != name)


def import_graph(root: Path = SOLAR) -> dict[str, set[str]]:
    """Module -> the `solar` modules it imports."""
    modules = _modules(root)
    return {name: set(_imports(name, path, modules)) for name, path in modules.items()}


def cycles(graph: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(frozenset(comp))
    return out


def test_the_finder_sees_a_function_level_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "solar"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from solar.sub.b import B\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from solar.sub import b\n    return b\n")
    (pkg / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nB = 1\n"
                                      "if TYPE_CHECKING:\n    from . import a\n")
    (pkg / "c.py").write_text("from solar.sub import B\n")
    graph = import_graph(pkg)
    assert graph["solar.c"] == {"solar.sub"}
    assert cycles(graph) == [frozenset({"solar.sub.a", "solar.sub.b"})]


def test_solar_has_no_import_cycles() -> None:
    found = [sorted(c) for c in cycles(import_graph())]
    assert not found, f"import cycles: {found}"
