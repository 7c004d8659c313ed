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
    # Every kind of import counts, subpackages' too: at module level,
    # inside a function and under `if TYPE_CHECKING:` (a type the checker
    # must read ties two modules as much as a call does).
    graph = grimp.build_graph("httpbench", include_external_packages=False,
                              exclude_type_checking_imports=False)
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
    assert "httpbench.agents.base" in edges and "httpbench.render.plots" in edges


# The model: what a run measured and its JSON. It draws nothing and runs
# nothing: its convenience methods reach render/ through httpbench._view,
# which httpbench/views.py (the adapter) fills.
MODEL = ("httpbench.result", "httpbench.comparison", "httpbench.capacity_result", "httpbench._view", "httpbench.figures", "httpbench.bound",
         "httpbench._typed")


def test_the_model_imports_no_drawing_and_no_runner():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("httpbench", include_external_packages=False,
                              exclude_type_checking_imports=False)
    for module in MODEL:
        below = graph.find_upstream_modules(module)  # (all it imports, at any depth)
        bad = sorted(m for m in below if m.startswith(("httpbench.render", "httpbench.views"))
                     or m in ("httpbench.runner", "httpbench.local", "httpbench.distributed",
                              "httpbench.compare", "httpbench.capacity", "httpbench.agents"))
        assert bad == [], (module, bad)
