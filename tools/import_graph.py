"""The import graph of a package: its internal imports, their cycles, the imports in functions.

    python tools/import_graph.py [--root clgrad] [--edges] [--module-level-only] [--check]

Reads the sources with ``ast`` (imports nothing of the package). An edge A -> B is an import in
module A of module B (``from B import name`` names B; ``from P import M`` names the module P.M
when P/M.py exists, as import-linter's graph does). Imports anywhere count: at module level
(class bodies and ``if`` blocks included) and inside functions, the latter marked ``[fn]``.
Prints the strongly connected components with more than one module (the cycles) and their
sizes, and the counts of edges and of import statements inside functions. ``--edges`` lists
every edge with its lines; ``--module-level-only`` leaves the imports inside functions out of
the graph (the cycles that import time alone would see). ``--check`` exits with status 1 when
there is a cycle (``make lint`` runs it: clgrad's graph has none).
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path


def module_names(root: Path) -> dict[str, Path]:
    """Map each module of the package at ``root`` (a folder) to its file."""
    base = root.parent
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _in_function(parents: dict, node: ast.AST) -> bool:
    node = parents.get(node)
    while node is not None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return True
        node = parents.get(node)
    return False


def imports(name: str, path: Path, modules: dict[str, Path]):
    """Yield ``(target_module, line, in_function)`` for each internal import of module ``name``."""
    tree = ast.parse(path.read_text(), str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                source = ".".join(anchor + ([node.module] if node.module else []))
            else:
                source = node.module
            targets = []
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                targets.append(sub if sub in modules else source)
        else:
            continue
        for target in targets:
            # `import a.b.c` of a name that is not a module: its deepest module prefix
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target, node.lineno, _in_function(parents, node)


def graph(root: Path):
    """``(modules, edges)``: edges maps (importer, imported) to a list of (line, in_function)."""
    modules = module_names(root)
    edges: dict[tuple[str, str], list[tuple[int, bool]]] = {}
    for name, path in modules.items():
        for target, line, in_fn in imports(name, path, modules):
            edges.setdefault((name, target), []).append((line, in_fn))
    return modules, edges


def cycles(nodes, adjacency: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one node, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(adjacency.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(adjacency.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return sorted(found, key=lambda c: (-len(c), c))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[1] / "clgrad"))
    parser.add_argument("--edges", action="store_true", help="list every edge")
    parser.add_argument("--module-level-only", action="store_true",
                        help="leave the imports inside functions out of the graph")
    parser.add_argument("--check", action="store_true", help="exit 1 when there is a cycle")
    args = parser.parse_args(argv)
    modules, edges = graph(Path(args.root))
    if args.module_level_only:
        edges = {e: [s for s in sites if not s[1]] for e, sites in edges.items()}
        edges = {e: sites for e, sites in edges.items() if sites}
    adjacency: dict[str, set[str]] = {}
    for a, b in edges:
        adjacency.setdefault(a, set()).add(b)
    if args.edges:
        for (a, b), sites in sorted(edges.items()):
            lines = ", ".join(f"{line}{' [fn]' if fn else ''}" for line, fn in sites)
            print(f"{a} -> {b}  ({lines})")
    in_fn = sum(fn for sites in edges.values() for _, fn in sites)
    fn_only = sum(all(fn for _, fn in sites) for sites in edges.values())
    found = cycles(sorted(modules), adjacency)
    print(f"modules: {len(modules)}  edges: {len(edges)}  "
          f"imports inside functions: {in_fn} (edges made only by them: {fn_only})")
    print(f"cycles: {len(found)}  sizes: {[len(c) for c in found]}")
    for component in found:
        print(f"  {len(component)}: {' '.join(component)}")
    return 1 if args.check and found else 0


if __name__ == "__main__":
    sys.exit(main())
