"""The README's HTTP API snippet runs as written (the API app, a token, the Python client)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"


def test_readme_api_snippet_runs_as_documented() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    snippet = [b for b in blocks if "create_app" in b]
    assert len(snippet) == 1
    exec(compile(snippet[0], "README.md", "exec"), {})
