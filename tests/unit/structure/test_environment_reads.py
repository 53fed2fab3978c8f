"""Every environment variable is read through a settings object: ``lunora_jobs.config.Settings``
(``rag`` has its own, since it never imports ``lunora_jobs``). A read anywhere else — ``os.environ[...]``,
``os.environ.get``, ``os.getenv``, ``"X" in os.environ`` — is a setting with its own default that the
others do not know about (the broker default once disagreed that way between the app and the workers).

Handing the whole environment to a child process (``{**os.environ, ...}``) reads no setting and is fine.
"""

from __future__ import annotations

import ast
from pathlib import Path

from import_graph import PACKAGES, ROOT

SETTINGS_MODULES = {"lunora_jobs/config.py", "rag/settings.py"}


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ"
            and isinstance(node.value, ast.Name) and node.value.id == "os") or (
        isinstance(node, ast.Name) and node.id == "environ")


def _is_getenv(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "getenv"
            and isinstance(func.value, ast.Name) and func.value.id == "os") or (
        isinstance(func, ast.Name) and func.id == "getenv")


def _reads(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        func = node.func
        environ_get = isinstance(func, ast.Attribute) and func.attr == "get" and _is_environ(func.value)
        return environ_get or _is_getenv(func)
    if isinstance(node, ast.Subscript):
        return isinstance(node.ctx, ast.Load) and _is_environ(node.value)
    return isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators)


def environment_reads(source: str) -> list[int]:
    """Lines of ``source`` that read a variable from the process environment."""
    return sorted({node.lineno for node in ast.walk(ast.parse(source)) if _reads(node)})


def _reads_by_file() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            lines = environment_reads(path.read_text())
            if lines and relative not in SETTINGS_MODULES:
                found[relative] = lines
    return found


def test_the_environment_is_read_only_by_the_settings_modules() -> None:
    found = _reads_by_file()
    assert not found, f"read these through Settings (lunora_jobs/config.py, rag/settings.py): {found}"


def test_every_form_of_read_is_caught(tmp_path: Path) -> None:
    source = (
        "import os\nfrom os import environ, getenv\n"
        "a = os.environ.get('A')\nb = os.environ['B']\nc = os.getenv('C')\nd = 'D' in os.environ\n"
        "e = environ.get('E')\nf = getenv('F')\n"
        "child = {**os.environ, 'X': '1'}\n"
    )
    assert environment_reads(source) == [3, 4, 5, 6, 7, 8]
