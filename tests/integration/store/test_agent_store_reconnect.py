"""A restarted PostgreSQL costs the hot path nothing: dead pooled connections are replaced.

The pool's pre-ping polls the socket instead of querying the server (no round trip per checkout),
so it must still notice a backend the server terminated; and the hot-path reads and writes re-run
their work on a fresh connection when a connection dies under them (ping off, to reach that path).
Backends are terminated with ``pg_terminate_backend``, exactly what a restart does to them.
"""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from lunora_jobs.store import NewMessage, NewRun, SqlStore, StepCompletion

pytestmark = pytest.mark.integration


def _terminate_pooled_backends(store: SqlStore) -> None:
    with store.engine.connect() as conn:
        pid = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
    admin = sa.create_engine(store.engine.url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        assert conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar_one()
        deadline = time.monotonic() + 5
        while conn.execute(sa.text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"),
                           {"pid": pid}).scalar_one():
            assert time.monotonic() < deadline, "the backend did not go away"
            time.sleep(0.01)
    admin.dispose()


def _seed(store: SqlStore) -> str:
    thread = store.ensure_thread("t1", owner="alice")
    store.create_run(NewRun(id="r1", thread_id=thread.id, agent="a", input=None, owner="alice"))
    return thread.id


def _one_step(store: SqlStore, i: int) -> None:
    claim = store.claim_step("r1", f"llm:turn:{i}", owner="w", lease_ms=60_000)
    assert claim.outcome == "claimed"
    message = NewMessage(key=f"r1:assistant:{i}", role="assistant", content=f"a{i}", run_id="r1")
    completion = StepCompletion(result={"i": i}, messages=[message], run_patch={"add_turns": 1})
    assert store.complete_step("r1", f"llm:turn:{i}", claim.step.generation, completion)


@pytest.mark.parametrize("pre_ping", [True, False], ids=["socket-ping", "retry-on-disconnect"])
def test_a_terminated_backend_is_replaced_without_an_error(pg_url: str, pre_ping: bool) -> None:
    store = SqlStore.from_url(pg_url, pool_pre_ping=pre_ping)
    errors: list[BaseException] = []
    pinged: list[BaseException] = []

    def on_error(ctx: sa.engine.ExceptionContext) -> None:
        (pinged if ctx.is_pre_ping else errors).append(ctx.original_exception)

    sa.event.listen(store.engine, "handle_error", on_error)
    try:
        thread_id = _seed(store)
        _one_step(store, 0)
        _terminate_pooled_backends(store)
        run = store.get_run("r1")  # a read first: the dead connection is the pooled one
        assert run is not None and run.turns == 1
        _one_step(store, 1)
        _terminate_pooled_backends(store)
        _one_step(store, 2)  # a write first
        assert [m.content for m in store.list_messages(thread_id)] == ["a0", "a1", "a2"]
        assert store.get_run("r1").turns == 3  # type: ignore[union-attr]
        if pre_ping:
            # The socket poll flagged both dead connections; the real ping on them confirmed it.
            assert errors == [] and len(pinged) == 2
        else:
            assert len(errors) == 2  # each dead connection failed once, and the work was re-run
    finally:
        store.close()
