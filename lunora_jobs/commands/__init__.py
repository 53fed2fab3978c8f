"""The ``lunora`` command's groups, one module each.

To add a command group: write ``lunora_jobs/commands/<name>.py`` holding ``NAME`` and ``group`` (a
``typer.Typer`` mounted as ``lunora NAME ...``) — or, for top-level commands, a ``register(app)``
function — and list the module in ``GROUPS``.
Use ``_common`` for the shared options (``--json``, ``--url``, ``--debug``), one-line errors with their
fix (``guard``) and table / JSON-lines output (``emit``). Import heavy modules inside the commands so
``lunora --help`` stays fast.
"""

from __future__ import annotations

import importlib

import typer

GROUPS: tuple[str, ...] = (
    "run", "runs", "approve", "schedules", "threads", "generate", "db", "doctor", "services", "rag",
    "pricing", "governance", "proposals",
)
"""Registered in this order (``lunora --help`` lists commands as registered)."""


def register_all(app: typer.Typer, groups: tuple[str, ...] = GROUPS) -> None:
    """Add every command group to ``app``."""
    for name in groups:
        module = importlib.import_module(f"{__name__}.{name}")
        if hasattr(module, "group"):
            app.add_typer(module.group, name=module.NAME)
        else:
            module.register(app)


__all__ = ["GROUPS", "register_all"]
