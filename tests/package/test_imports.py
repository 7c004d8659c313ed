"""The package's modules import each other without a cycle (function-level
imports included, as grimp reads them): a cycle is two modules that cannot
be understood, or changed, one without the other."""

from __future__ import annotations

import pytest


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first walk of edges closes, each as its path."""
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def walk(node: str, path: list[str]) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                walk(nxt, path)
        path.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            walk(node, [])
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_package_has_no_import_cycle():
    grimp = pytest.importorskip("grimp")
    # Imports under `if TYPE_CHECKING:` are for the type checker alone (the
    # renderers name Result so): they run never, and tie nothing.
    graph = grimp.build_graph("httpbench", include_external_packages=False,
                              exclude_type_checking_imports=True)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    # The package's __init__ imports the public names from its modules, so
    # a module importing the package itself closes a cycle with it. grimp
    # reads `from . import _core` (the C extension, no .py for it to see)
    # as an import of the package: that one edge is the extension's.
    for module, imported in edges.items():
        if "httpbench" in imported and all(
                "_core" in d["line_contents"]
                for d in graph.get_import_details(importer=module, imported="httpbench")):
            imported.discard("httpbench")
    assert cycles(edges) == []
