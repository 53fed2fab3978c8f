"""A run's start on PostgreSQL: one statement when the thread is free (``create_run_on_free_thread``),
the plain start (``ensure_thread``, ``admit``, ``create_run``) for everything else — with the same
results, owners and ``on_concurrent_run`` policies either way."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier
from typing import Any

import pytest
import sqlalchemy as sa

from lunora_jobs import ConflictError, define_agent, final_turn, tool, tool_call_turn
from lunora_jobs.errors import OwnerRequiredError
from lunora_jobs.store import NewRun, RunOpening, SqlStore, ThreadRecord
from lunora_jobs.store.records import JSON, NewMessage
from lunora_jobs.store.schema import runs
from lunora_jobs.testing import agent_harness

pytestmark = pytest.mark.integration


class PlainStartStore(SqlStore):
    """``SqlStore`` whose fused start never takes: every start goes the plain way."""

    def create_run_on_free_thread(
        self, key: str, run: NewRun, opening: RunOpening, *, title: str | None = None,
        initial_state: JSON = None,
    ) -> ThreadRecord | None:
        return None


class RecordingStartStore(SqlStore):
    """``SqlStore`` that records which starts its fused start took (the run id) or left (None)."""

    taken: list[str | None]

    def create_run_on_free_thread(
        self, key: str, run: NewRun, opening: RunOpening, *, title: str | None = None,
        initial_state: JSON = None,
    ) -> ThreadRecord | None:
        thread = super().create_run_on_free_thread(key, run, opening, title=title,
                                                   initial_state=initial_state)
        self.taken.append(None if thread is None else run.id)
        return thread


@pytest.fixture
def pg_store(pg_tables_url: str) -> Iterator[RecordingStartStore]:
    store = RecordingStartStore.from_url(pg_tables_url)
    store.taken = []
    yield store
    store.close()


def _wire_agent(**options: Any) -> Any:
    @tool(needs_approval=True)
    def wire(amount: float) -> str:
        """Wire money."""
        return "sent"

    return define_agent(name="banker", model="offline", instructions="Be careful.", tools=[wire],
                        initial_state={"n": 0}, **options)


def _waiting_then_done() -> list[Any]:
    return [tool_call_turn("w1", "wire", {"amount": 10}), final_turn("done")]


def test_a_start_on_a_free_thread_records_what_the_plain_start_does(
    pg_store: RecordingStartStore, pg_url: str
) -> None:
    plain = PlainStartStore.from_url(pg_url)
    try:
        results = []
        for store in (pg_store, plain):
            harness = agent_harness(define_agent(name="hello", model="offline", instructions="Hi.",
                                                 initial_state={"k": 1}),
                                    script=[final_turn("hello"), final_turn("again")], store=store)
            first = harness.run(input="one", thread_key="t", owner="alice", title="T")
            second = harness.run(input="two", thread_key="t", owner="alice")
            thread = harness.thread("t")
            results.append((
                (first.status, first.text, second.status, second.text),
                (thread.owner, thread.title, thread.status, thread.agent, thread.state,
                 thread.active_run_id),
                [(m.seq, m.role, m.content, m.key.split(":", 1)[1]) for m in harness.messages("t")],
                [(r.owner, r.agent, r.status, r.thread_id == thread.id) for r in
                 (store.get_run(first.run_id), store.get_run(second.run_id)) if r is not None],
            ))
        assert results[0] == results[1]
        assert len(pg_store.taken) == 2 and None not in pg_store.taken  # both starts were fused
        assert results[0][2] == [(1, "user", "one", "user:0"), (2, "assistant", "hello", "assistant:0"),
                                 (3, "user", "two", "user:0"), (4, "assistant", "again", "assistant:0")]
    finally:
        plain.close()


def test_a_busy_thread_rejects_with_nothing_recorded_for_the_loser(pg_store: RecordingStartStore) -> None:
    harness = agent_harness(_wire_agent(), script=_waiting_then_done(), store=pg_store)
    waiting = harness.run(input="wire 10", thread_key="t")
    assert waiting.status == "awaiting_input"
    before = harness.thread("t")
    with pytest.raises(ConflictError, match="already has run"):
        harness.run(input="again", thread_key="t")
    assert pg_store.taken == [waiting.run_id, None]  # the second went the plain way, which refused it
    after = harness.thread("t")
    assert (after.active_run_id, after.status, after.updated_at) == (
        waiting.run_id, before.status, before.updated_at)
    assert [m.run_id for m in harness.messages("t")] == [waiting.run_id] * 2
    with pg_store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(runs)).scalar() == 1


def test_the_queue_policy_still_lines_runs_up_behind_the_one_in_flight(pg_store: SqlStore) -> None:
    harness = agent_harness(_wire_agent(on_concurrent_run="queue"),
                            script=[*_waiting_then_done(), final_turn("second"), final_turn("third")],
                            store=pg_store)
    first = harness.run(input="wire 10", thread_key="t")
    second = harness.run(input="then this", thread_key="t")
    third = harness.run(input="and this", thread_key="t")
    assert (first.status, second.status, third.status) == ("awaiting_input", "queued", "queued")
    assert pg_store.taken == [first.run_id, None, None]
    harness.resolve("t", "w1", approve=True)
    assert [harness.result(r.run_id).text for r in (first, second, third)] == ["done", "second", "third"]
    assert harness.thread("t").active_run_id is None


def test_the_replace_policy_still_cancels_the_run_in_flight(pg_store: SqlStore) -> None:
    harness = agent_harness(_wire_agent(on_concurrent_run="replace"), script=[*_waiting_then_done()],
                            store=pg_store)
    first = harness.run(input="wire 10", thread_key="t")
    second = harness.run(input="never mind", thread_key="t")
    assert harness.result(first.run_id).status == "cancelled"
    assert (second.status, second.text) == ("completed", "done")


def test_owners_are_checked_as_on_the_plain_start(pg_store: SqlStore) -> None:
    harness = agent_harness(define_agent(name="hello", model="offline", instructions="Hi."),
                            script=[final_turn("a"), final_turn("b")], store=pg_store)
    mine = harness.run(input="mine", thread_key="t", owner="alice")
    assert mine.status == "completed" and pg_store.taken == [mine.run_id]
    with pytest.raises(OwnerRequiredError):
        harness.run(input="anonymous", thread_key="t")
    with pytest.raises(ConflictError, match="another owner"):
        harness.run(input="stranger", thread_key="t", owner="bob")
    handle = harness.app.agents.hello.run(input="on alice's behalf", thread_key="t", as_system=True)
    run = pg_store.get_run(handle.id)
    assert run is not None and (run.owner, run.status) == ("alice", "completed")
    assert pg_store.taken == [mine.run_id, None, None, None]  # the owner checks are the plain way's
    # A new thread a start names no owner for has none; a later owner is refused by the plain way.
    assert harness.run(input="open", thread_key="open").status == "completed"
    with pytest.raises(ConflictError, match="another owner"):
        harness.run(input="claim it", thread_key="open", owner="alice")


def test_an_instructions_callable_is_resolved_once_on_the_plain_start(pg_store: RecordingStartStore) -> None:
    calls: list[dict[str, Any]] = []

    def instructions(context: dict[str, Any]) -> str:
        calls.append(context)
        return f"Serve {context['owner']}."

    harness = agent_harness(define_agent(name="hello", model="offline", instructions=instructions),
                            script=[final_turn("a")], store=pg_store)
    harness.run(input="hi", thread_key="t", owner="alice")
    assert [c["owner"] for c in calls] == ["alice"] and pg_store.taken == []  # user code: never fused
    assert harness.model.calls[0][0] == {"role": "system", "content": "Serve alice."}


def test_concurrent_fused_starts_on_one_new_thread_yield_exactly_one_owner(pg_store: SqlStore) -> None:
    contenders = 6
    barrier = Barrier(contenders)

    def start(i: int) -> ThreadRecord | None:
        run = NewRun(f"r{i}", "", "a", "go", owner="alice")
        message = NewMessage(key=f"r{i}:user:0", role="user", content="go", run_id=f"r{i}")
        opening = RunOpening(message=message, thread_status="running")
        barrier.wait(timeout=30)
        return pg_store.create_run_on_free_thread("t", run, opening)

    with ThreadPoolExecutor(contenders) as pool:
        outcomes = list(pool.map(start, range(contenders)))
    winners = [thread for thread in outcomes if thread is not None]
    assert len(winners) == 1
    (winner,) = winners
    assert winner.active_run_id is not None and winner.status == "running"
    with pg_store.engine.connect() as conn:
        assert conn.execute(sa.select(runs.c.id)).scalars().all() == [winner.active_run_id]
    messages = pg_store.load_thread_for_turn(winner.id)
    assert [(m.seq, m.run_id) for m in messages] == [(1, winner.active_run_id)]
