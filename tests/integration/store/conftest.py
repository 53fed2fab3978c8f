"""The ``store`` fixture: one contract suite over InMemoryStore, SQLite, PostgreSQL and MariaDB.

Every SQL backend gets a fresh database (the root conftest's URL fixtures; on SQLite and PostgreSQL a clone
that already has the tables, empty; ``sql_url`` is always an empty database) and an
injected clock, so tests move time instead of sleeping.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agent_store_support import FakeClock

from lunora_jobs.store import AgentStore, InMemoryStore, SqlStore

BACKENDS = ["memory", "sqlite", "postgres", "mariadb"]
SQL_BACKENDS = ["sqlite", "postgres", "mariadb"]
_URL_FIXTURE = {"sqlite": "sqlite_url", "postgres": "pg_url", "mariadb": "mysql_url"}
# The store fixture's SQLite / PostgreSQL database is a clone with the tables already in it
# (sqlite_tables_url, pg_tables_url).
_STORE_URL_FIXTURE = {**_URL_FIXTURE, "sqlite": "sqlite_tables_url", "postgres": "pg_tables_url"}


@pytest.fixture
def clock() -> FakeClock:
    """The store's clock (noon, 2026-01-01 UTC unless moved)."""
    return FakeClock()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Which store implementation the test runs against."""
    return str(request.param)


@pytest.fixture
def store_url(request: pytest.FixtureRequest, backend: str) -> str | None:
    """A fresh database URL for SQL backends, None for memory."""
    if backend == "memory":
        return None
    return str(request.getfixturevalue(_STORE_URL_FIXTURE[backend]))


@pytest.fixture
def store(store_url: str | None, clock: FakeClock) -> Iterator[AgentStore]:
    """The store under test, tables auto-created on first use."""
    if store_url is None:
        yield InMemoryStore(clock=clock)
        return
    sql = SqlStore.from_url(store_url, clock=clock)
    try:
        yield sql
    finally:
        sql.close()


@pytest.fixture(params=SQL_BACKENDS)
def sql_url(request: pytest.FixtureRequest) -> str:
    """A fresh database URL on each SQL backend (for tests that need real processes / the catalog)."""
    return str(request.getfixturevalue(_URL_FIXTURE[str(request.param)]))
