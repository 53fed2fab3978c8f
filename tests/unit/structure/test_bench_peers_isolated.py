"""The peers measured by ``bench/peers.py`` (DBOS, LangGraph) are a benchmark's dependencies only:
no module of the project's packages imports them, at any depth (``bench`` extra, never ``dev``)."""

from __future__ import annotations

import ast

from import_graph import modules

PEER_MODULES = ("dbos", "langgraph", "langchain_core")


def test_no_package_module_imports_a_peer() -> None:
    found = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{name} imports {n}" for n in names if n.split(".")[0] in PEER_MODULES]
    assert not found, found
    assert len(modules()) > 100  # the scan saw the packages
