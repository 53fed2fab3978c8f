"""The README's RAG section, run block by block as written: Python blocks in a fresh interpreter,
shell blocks with ``bash``, in order, from the repository root, with a private ``LUNORA_DATA_DIR``.

It covers the path from ``lunora rag sync DIR --index NAME`` to ``define_rag(index=NAME).retrieve``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)

pytestmark = pytest.mark.slow


def rag_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Retrieval (RAG)")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_every_rag_block_runs_as_written(tmp_path: Path) -> None:
    blocks = FENCE.findall(rag_section())
    assert [lang for lang, _ in blocks] == ["python", "bash", "python"]
    env = {
        **os.environ,
        "LUNORA_DATA_DIR": str(tmp_path / "data"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("LUNORA_QDRANT_URL", None)
    outputs = []
    for lang, code in blocks:
        command = (
            [sys.executable, "-c", code] if lang == "python" else ["bash", "-euo", "pipefail", "-c", code]
        )
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"README {lang} block failed:\n{code}\n--- stderr ---\n{done.stderr}"
        outputs.append(done.stdout)
    assert "Reset your password" in outputs[0]
    assert (tmp_path / "data" / "vectors" / "handbook").is_dir()
    # define_rag(index="handbook") reads what the sync wrote: file names from the synced folder.
    assert ".md'" in outputs[2], outputs[2]
