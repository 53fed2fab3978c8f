"""Helpers for the store contract suite: a fake clock and the bodies of spawned worker processes.

Worker functions live in this module (not a test module) so ``multiprocessing``'s spawn start
method can import them in a fresh interpreter.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest
import sqlalchemy as sa

from lunora_jobs.store import AgentStore, SqlStore
from lunora_jobs.testing import FakeClock as _FakeClock

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z, a UTC midnight

FakeClock = partial(_FakeClock, START + 12 * 3_600_000)
"""``lunora_jobs.testing.FakeClock`` starting at noon of START's day (usage windows are UTC days)."""


class Injected(Exception):
    """The failure a test injects mid-transaction."""


@contextmanager
def fail_on(store: AgentStore, prefix: str) -> Iterator[None]:
    """Make the first statement starting with ``prefix`` fail (after earlier ones ran)."""
    if not isinstance(store, SqlStore):
        pytest.skip("InMemoryStore runs each operation under one lock; nothing to interrupt")

    def boom(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if " ".join(statement.split()).upper().startswith(prefix):
            raise Injected(statement)

    sa.event.listen(store.engine, "before_cursor_execute", boom)
    try:
        yield
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", boom)


@contextmanager
def fail_in_statement(store: AgentStore, prefix: str) -> Iterator[type[BaseException]]:
    """Make the write ``prefix`` names (``"INSERT INTO AGENT_OUTBOX"``, ``"UPDATE AGENT_RUNS"``) fail;
    yields the exception type to expect.

    On PostgreSQL the store's multi-write operations (a completion, a run's start) are ONE statement
    of data-modifying CTEs, so the failure is raised inside the database, by a trigger on that
    table, after the statement's other writes ran. Elsewhere the statement fails on its way out.
    """
    if not (isinstance(store, SqlStore) and store.dialect == "postgresql"):
        with fail_on(store, prefix):
            yield Injected
        return
    operation, table = prefix.split()[0], prefix.split()[-1].lower()
    ddl = [
        "CREATE FUNCTION lunora_test_boom() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected'; "
        "END $$ LANGUAGE plpgsql",
        f"CREATE TRIGGER lunora_test_boom BEFORE {operation} ON {table} FOR EACH ROW "
        "EXECUTE FUNCTION lunora_test_boom()",
    ]
    with store.engine.begin() as conn:
        for statement in ddl:
            conn.execute(sa.text(statement))
    try:
        yield sa.exc.DBAPIError
    finally:
        with store.engine.begin() as conn:
            conn.execute(sa.text(f"DROP TRIGGER lunora_test_boom ON {table}"))
            conn.execute(sa.text("DROP FUNCTION lunora_test_boom()"))


def append_worker(url: str, thread_id: str, worker: int, rounds: int, barrier: Any) -> None:
    """Append a mix of shared keys (every worker writes them) and private keys, one per call."""
    from lunora_jobs.store import NewMessage, SqlStore

    store = SqlStore.from_url(url, auto_create_tables=False)
    barrier.wait(timeout=60)
    for i in range(rounds):
        store.append_message(thread_id, NewMessage(key=f"shared:user:{i}", role="user", content=f"w{worker}"))
        store.append_messages(thread_id, [NewMessage(key=f"w{worker}:user:{i}", role="user", content="mine")])
    store.close()


def ensure_worker(url: str, barrier: Any, results: Any) -> None:
    """Provision the schema at the same moment as the other workers; report statements issued."""
    from lunora_jobs.store import create_engine, ensure_tables

    engine = create_engine(url)
    barrier.wait(timeout=60)
    results.put(ensure_tables(engine))
    engine.dispose()


def claim_worker(url: str, run_id: str, worker: int, barrier: Any, results: Any) -> None:
    """Race for one step; report the outcome."""
    from lunora_jobs.store import SqlStore

    store = SqlStore.from_url(url, auto_create_tables=False)
    barrier.wait(timeout=60)
    claim = store.claim_step(run_id, "llm:turn:0", owner=f"w{worker}", lease_ms=60_000)
    results.put((claim.outcome, claim.step.lease_owner, claim.step.generation))
    store.close()
