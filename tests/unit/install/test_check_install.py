"""``scripts/check-install`` (CI's footprint step) fails on torch / CUDA packages and prints the size."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "check-install"


def _fake_venv(root: Path, packages: list[str]) -> Path:
    """A folder whose ``bin/python -m pip list --format=freeze`` prints ``packages``."""
    (root / "bin").mkdir(parents=True)
    python = root / "bin" / "python"
    python.write_text("#!/bin/sh\nprintf '%s\\n' " + " ".join(f"'{p}'" for p in packages) + "\n")
    python.chmod(0o755)
    return root


def _check(venv: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), str(venv)], capture_output=True, text=True, timeout=60,
                          check=False)


def test_a_light_install_passes_and_its_size_is_printed(tmp_path: Path) -> None:
    done = _check(_fake_venv(tmp_path / "venv", ["numpy==2.1.0", "tokenizers==0.23.3"]))
    assert done.returncode == 0, done.stderr
    assert re.search(rf"virtualenv {re.escape(str(tmp_path / 'venv'))}: \d+ MB", done.stdout), done.stdout
    assert "no torch" in done.stdout


def test_torch_or_cuda_packages_fail_the_check(tmp_path: Path) -> None:
    packages = ["numpy==2.1.0", "torch==2.13.0", "nvidia-cublas-cu12==12.4"]
    done = _check(_fake_venv(tmp_path / "venv", packages))
    assert done.returncode == 1
    assert "torch==2.13.0" in done.stderr and "nvidia-cublas-cu12==12.4" in done.stderr
