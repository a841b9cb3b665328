"""No import circle anywhere: the three packages and the benchmarks form a
graph that can be read from the bottom up (the protocol, then the client and
the daemon's inner layers, then their entry points).

`lint-imports` checks the layers; this checks what layers cannot: that no
two modules, even in one layer, reach each other, type-checking imports
included (a circle there still means the two cannot be understood alone).
"""

from __future__ import annotations

import grimp

PACKAGES = ("omem_protocol", "omem_client", "openmemoryd", "bench")


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        # Iterative, so a deep chain cannot hit the recursion limit.
        work = [(module, iter(sorted(graph.find_modules_directly_imported_by(module))))]
        order[module] = low[module] = len(order)
        stack.append(module)
        on_stack.add(module)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in order:
                    order[target] = low[target] = len(order)
                    stack.append(target)
                    on_stack.add(target)
                    imported = sorted(graph.find_modules_directly_imported_by(target))
                    work.append((target, iter(imported)))
                    break
                if target in on_stack:
                    low[node] = min(low[node], order[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == order[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in order:
            visit(module)
    return found


def test_no_import_circle_in_the_packages_or_the_benchmarks() -> None:
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=False)
    assert len(graph.modules) > 150  # the whole code base, not an empty graph
    assert circles(graph) == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for module in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(module)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.z")
    graph.add_import(importer="a.z", imported="a.x")
    assert circles(graph) == [["a.x", "a.y", "a.z"]]
