"""Measure: the import graph of ``rag/`` (the AST of every module, no import executed).

Prints the project imports per module (named modules and the five largest), and the package-level
cycles: packages are ``rag.<first part>`` (``rag.runner``, ``rag.config``); an import between two
packages of one strongly connected component (Tarjan) is a *back-up arrow*, a lower layer reaching
back up. Imports inside functions and under ``TYPE_CHECKING`` count like any other.

    python scripts/measure_imports.py [ROOT] [MODULE ...]    # ROOT: the checkout (default: .)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in (root / "rag").rglob("*.py"):
        rel = path.relative_to(root).with_suffix("")
        found[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = path
    return found


def edges(found: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (an imported name resolved to its longest known module)."""

    def resolve(name: str) -> str | None:
        while name and name not in found:
            name = name.rpartition(".")[0]
        return name or None

    out: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets = [f"{base}.{a.name}" if resolve(f"{base}.{a.name}") == f"{base}.{a.name}" else base
                           for a in node.names]
            for target in targets:
                if target.startswith("rag") and (module := resolve(target)) and module != name:
                    out[name].add(module)
    return out


def package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def components(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components (Tarjan, recursive: the package graph is small)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while (w := stack.pop()) != v:
                component.add(w)
            found.append(component | {v})

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def main(argv: list[str]) -> None:
    root = Path(argv[0]) if argv else Path(".")
    graph = edges(modules(root))
    packages: dict[str, set[str]] = {}
    for source, targets in graph.items():
        packages.setdefault(package(source), set()).update(package(t) for t in targets if package(t) != package(source))
    cycles = [c for c in components(packages) if len(c) > 1]
    inside = {p: i for i, c in enumerate(cycles) for p in c}
    back = sorted((s, t) for s, ts in graph.items() for t in ts
                  if package(s) != package(t) and package(s) in inside and inside[package(s)] == inside.get(package(t)))
    print(f"modules {len(graph)}, project imports {sum(map(len, graph.values()))}")
    for name in argv[1:]:
        print(f"{name}: {len(graph[name])} project imports")
    print("most project imports:", ", ".join(f"{m} {len(graph[m])}" for m in sorted(graph, key=lambda m: -len(graph[m]))[:5]))
    print("package-level cycles:", [sorted(c) for c in cycles])
    print(f"back-up arrows (module imports inside a package cycle): {len(back)}")
    for source, target in back:
        print(f"    {source} -> {target}")


if __name__ == "__main__":
    main(sys.argv[1:])
