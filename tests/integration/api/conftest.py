"""The ``stack`` fixture: a fresh database, a worker and API processes started on demand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from api_stack import REDIS_DB, ApiStack
from private_redis import PrivateRedis


@pytest.fixture
def stack_env() -> dict[str, str]:
    """Extra environment for every process of the stack (a test module may override this fixture)."""
    return {}


@pytest.fixture
def stack(pg_url: str, private_redis: PrivateRedis, tmp_path: Path, monkeypatch: Any,
          stack_env: dict[str, str]) -> Iterator[ApiStack]:
    """An API stack over this test's own database; every process it started is stopped afterwards."""
    private_redis.client(REDIS_DB).flushdb()
    stack = ApiStack(pg_url, private_redis.url(REDIS_DB), tmp_path, monkeypatch, **stack_env)
    try:
        yield stack
    finally:
        stack.close()
