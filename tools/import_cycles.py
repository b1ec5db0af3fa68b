"""Print every import cycle among a package's modules (default: replaykit).

Imports inside functions count (grimp reads every import statement of a module, wherever it
sits), and so do imports under ``if TYPE_CHECKING:`` unless ``--runtime-only`` is given. A
cycle is a strongly connected component of the module graph with more than one module; for
each one the edges that close it (imports from a module to another module of the same
component) are listed with their line numbers.

Usage::

    python tools/import_cycles.py            # replaykit, exit status 1 if any cycle
    python tools/import_cycles.py --json     # machine-readable: [[module, ...], ...]

Used by tests/test_layers.py (``sccs()``, ``edges_within()``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable

import grimp


def build_graph(package: str = "replaykit", *, runtime_only: bool = False) -> grimp.ImportGraph:
    """The import graph of ``package`` (internal modules only, imports in functions included)."""
    return grimp.build_graph(package, exclude_type_checking_imports=runtime_only,
                             cache_dir=None)


def sccs(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components with more than one module (each sorted; the list
    sorted by size, largest first, then by name). Tarjan's algorithm, iterative."""
    modules = sorted(graph.modules)
    succ = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in modules:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            nxt = succ[v]
            if i < len(nxt):
                work.append((v, i + 1))
                w = nxt[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return sorted(out, key=lambda c: (-len(c), c))


def edges_within(graph: grimp.ImportGraph, component: Iterable[str]
                 ) -> list[tuple[str, str, list[int]]]:
    """The imports between modules of ``component``: (importer, imported, line numbers)."""
    comp = set(component)
    edges = []
    for a in sorted(comp):
        for b in sorted(graph.find_modules_directly_imported_by(a) & comp):
            details = graph.get_import_details(importer=a, imported=b)
            edges.append((a, b, sorted({d["line_number"] for d in details})))
    return edges


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("package", nargs="?", default="replaykit")
    ap.add_argument("--json", action="store_true", help="print the components as JSON")
    ap.add_argument("--runtime-only", action="store_true",
                    help="leave out imports under `if TYPE_CHECKING:`")
    args = ap.parse_args(argv)
    graph = build_graph(args.package, runtime_only=args.runtime_only)
    comps = sccs(graph)
    if args.json:
        print(json.dumps(comps, indent=1))
        return 1 if comps else 0
    print(f"{len(graph.modules)} modules, {len(comps)} import cycle(s) "
          f"(strongly connected components of more than one module)")
    for k, comp in enumerate(comps, 1):
        print(f"\ncycle {k}: {len(comp)} modules")
        for m in comp:
            print(f"  {m}")
        print("  edges inside it:")
        for a, b, lines in edges_within(graph, comp):
            print(f"    {a} -> {b}  (line {', '.join(map(str, lines))})")
    return 1 if comps else 0


if __name__ == "__main__":
    sys.exit(main())
