"""The governance tests' stores: one per backend (in-memory, SQLite, PostgreSQL, MariaDB), each on a
``FakeClock`` the test moves, since the ledger's rows and every window are on the store's clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lunora_jobs.governance import DAY_MS
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.memory import InMemoryStore
from lunora_jobs.store.sql import create_store
from lunora_jobs.testing import FakeClock

MIDNIGHT = 1_764_460_800_000  # 2025-11-30T00:00:00Z
BACKENDS = ["memory", "sqlite", "postgresql", "mysql"]


def backend_store(request: pytest.FixtureRequest, clock: FakeClock) -> Iterator[AgentStore]:
    """The store of backend ``request.param`` on ``clock`` (closed afterwards)."""
    if request.param == "memory":
        yield InMemoryStore(clock=clock)
        return
    url = request.getfixturevalue({"sqlite": "sqlite_url", "postgresql": "pg_url", "mysql": "mysql_url"}[
        request.param])
    made = create_store(url, clock=clock)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def clock() -> FakeClock:
    """The store's clock: three days after ``MIDNIGHT`` unless a test moves it."""
    return FakeClock(MIDNIGHT + 3 * DAY_MS)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, clock: FakeClock) -> Iterator[AgentStore]:
    """A fresh store of each backend."""
    yield from backend_store(request, clock)
