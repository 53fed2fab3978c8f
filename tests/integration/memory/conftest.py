"""Fixtures of the memory tests: the agent store on each real backend, a rag with per-owner RLS."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lunora_jobs.store import AgentStore, InMemoryStore, SqlStore
from lunora_jobs.testing import FakeClock
from rag import HashingEmbedder, Rag, define_rag
from rag.stores.memory import MemoryStore

BACKENDS = ["memory", "sqlite", "postgres", "mariadb"]
_URL_FIXTURE = {"sqlite": "sqlite_tables_url", "postgres": "pg_tables_url", "mariadb": "mysql_url"}


@pytest.fixture
def clock() -> FakeClock:
    """The store's clock: tests move it past leases and grace periods instead of sleeping."""
    return FakeClock()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, clock: FakeClock) -> Iterator[AgentStore]:
    """The agent store under test: InMemoryStore, then SqlStore on a fresh SQLite, PostgreSQL and
    MariaDB database."""
    if request.param == "memory":
        yield InMemoryStore(clock=clock)
        return
    sql = SqlStore.from_url(str(request.getfixturevalue(_URL_FIXTURE[request.param])), clock=clock)
    try:
        yield sql
    finally:
        sql.close()


@pytest.fixture
def docs() -> Rag:
    """A rag whose rows belong to owners (``rls_filter``): alice's and bob's notes, plus a shared FAQ
    tagged for both, so a search can only ever return the caller's own rows."""
    rag = define_rag(
        embedding=HashingEmbedder(), store=MemoryStore(), index="notes", allow_shared_namespace=True,
        rls_filter=lambda auth: {"owner": auth["owner"]},
    )
    rag.index("alice-plan", "Alice's travel plan: the Lisbon conference flight leaves on March 3.",
              metadata={"owner": "alice"})
    rag.index("alice-pet", "Alice's cat is called Miso and eats salmon twice a day.",
              metadata={"owner": "alice"})
    rag.index("bob-plan", "Bob's travel plan: the Oslo conference train leaves on March 9.",
              metadata={"owner": "bob"})
    rag.index("bob-secret", "Bob's locker code is 4471; never share it with anyone.",
              metadata={"owner": "bob"})
    return rag
