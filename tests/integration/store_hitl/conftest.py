"""The ``store`` fixture for the approvals / cancel / queue contract: memory, SQLite, Postgres, MariaDB."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lunora_jobs.store import AgentStore, InMemoryStore, SqlStore

BACKENDS = ["memory", "sqlite", "postgres", "mariadb"]
_URL_FIXTURE = {"sqlite": "sqlite_tables_url", "postgres": "pg_tables_url", "mariadb": "mysql_url"}


class Clock:
    """Epoch-ms that only moves when a test says so (ties on purpose: order must not need time)."""

    def __init__(self) -> None:
        self.now = 1_767_268_800_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Which store implementation the test runs against."""
    return str(request.param)


@pytest.fixture
def store_url(request: pytest.FixtureRequest, backend: str) -> str | None:
    """A fresh database URL for SQL backends, None for memory."""
    return None if backend == "memory" else str(request.getfixturevalue(_URL_FIXTURE[backend]))


@pytest.fixture
def store(store_url: str | None) -> Iterator[AgentStore]:
    """The store under test with a frozen clock."""
    if store_url is None:
        yield InMemoryStore(clock=Clock())
        return
    sql = SqlStore.from_url(store_url, clock=Clock())
    try:
        yield sql
    finally:
        sql.close()
