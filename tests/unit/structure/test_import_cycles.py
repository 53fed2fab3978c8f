"""No import cycles between the modules of ``lunora_jobs``, ``workers``, ``channels`` and ``rag``.

Static, over the import graph read with ``ast`` (``import_graph.py``): an import inside a function,
or under ``if TYPE_CHECKING:``, counts like any other — hiding a cycle in a function only delays it.
"""

from __future__ import annotations

from pathlib import Path

from import_graph import Edge, cycles, edges, modules


def _describe(component: list[str], graph_edges: list[Edge]) -> str:
    members = set(component)
    lines = [
        f"  {e.importer} -> {e.imported} (line {e.line}{', inside a function' if e.local else ''})"
        for e in graph_edges
        if e.importer in members and e.imported in members
    ]
    return "\n".join(sorted(set(lines)))


def test_the_packages_have_no_import_cycles() -> None:
    graph_edges = edges()
    found = cycles(graph_edges)
    assert not found, "import cycles:\n" + "\n\n".join(_describe(c, graph_edges) for c in found)


def test_the_graph_covers_every_package_and_counts_local_imports() -> None:
    found = modules()
    assert {name.split(".")[0] for name in found} == {"lunora_jobs", "workers", "channels", "rag"}
    assert "lunora_jobs.engine" in found and "lunora_jobs.store.sql" in found
    assert any(e.local for e in edges(found))  # function-local imports are in the graph


def test_a_cycle_hidden_in_a_function_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def later():\n    from pkg.a import thing\n    return thing\n")
    (package / "c.py").write_text("import typing\nif typing.TYPE_CHECKING:\n    from . import d\n")
    (package / "d.py").write_text("import pkg.c\n")
    graph_edges = edges(modules(tmp_path, ["pkg"]))
    assert cycles(graph_edges) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"]]
    assert Edge("pkg.b", "pkg.a", 2, True) in graph_edges
