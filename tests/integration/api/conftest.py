"""The ``stack`` fixture: a fresh database, a worker and API processes started on demand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from api_stack import ApiStack


@pytest.fixture
def stack(pg_url: str, tmp_path: Path, monkeypatch: Any) -> Iterator[ApiStack]:
    """An API stack over this test's own database; every process it started is stopped afterwards."""
    stack = ApiStack(pg_url, tmp_path, monkeypatch)
    try:
        yield stack
    finally:
        stack.close()
