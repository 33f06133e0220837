"""minijax is layered: a module imports only modules of lower layers (or of its own
layer, without cycles). Function-local imports count as much as top-level ones: they
are dependencies too, only later.

The layers, lowest first, are listed in ``booktools.layers.LAYERS`` (the README's engine
map and chapter 00's picture show the same). :data:`KNOWN` lists the upward imports that
remain while the teaching-core restructuring is under way: the test fails on any upward
import that is not listed, and on any listed one that has gone (so that the list can only
shrink); the same for the modules still caught in an import cycle (:data:`KNOWN_CYCLIC`).
"""

from __future__ import annotations

import pathlib
from collections import defaultdict

from booktools.layers import LAYERS, MODULES, imports_of, layer_of

ROOT = pathlib.Path(__file__).resolve().parent.parent
GRAPH = {module: imports_of(module) for module in MODULES}


# (importer, imported) pairs that break the layering today: the restructuring removes
# them one by one. Do not add to this list: fix the import instead.
KNOWN: set[tuple[str, str]] = set()


def upward_imports() -> dict[tuple[str, str], list[str]]:
    """(importer, imported) -> where: the imports of a module of a higher layer."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module, imports in GRAPH.items():
        for target, line in imports:
            if layer_of(target) > layer_of(module):
                where = f"{MODULES[module].relative_to(ROOT)}:{line}"
                if where not in found[(module, target)]:
                    found[(module, target)].append(where)
    return found


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


def test_no_upward_imports():
    found = upward_imports()
    new = {edge: where for edge, where in found.items() if edge not in KNOWN}
    names = list(LAYERS)
    message = "\n".join(
        f"{', '.join(where)}: minijax.{a} ({names[layer_of(a)]}) imports minijax.{b} "
        f"({names[layer_of(b)]}), a higher layer"
        for (a, b), where in sorted(new.items()))
    assert not new, "upward imports:\n" + message


def test_known_upward_imports_still_exist():
    """Once an upward import is gone, it must leave KNOWN too (the list only shrinks)."""
    gone = KNOWN - set(upward_imports())
    assert not gone, f"remove from KNOWN, they are fixed: {sorted(gone)}"


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w, _ in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for module in MODULES:
        if module not in index:
            visit(module)
    return components


# Modules still in an import cycle. Empty, and to stay so: do not add to this set, break
# the cycle instead.
KNOWN_CYCLIC: set[str] = set()


def test_no_import_cycles():
    """Modules may import others of their own layer, but never in a circle."""
    cyclic = {module for component in _cycles() for module in component}
    new = [c for c in _cycles() if not set(c) <= KNOWN_CYCLIC]
    assert not new, "import cycles: " + "; ".join(" <-> ".join(c) for c in new)
    gone = KNOWN_CYCLIC - cyclic
    assert not gone, f"remove from KNOWN_CYCLIC, they are in no cycle now: {sorted(gone)}"
