"""The fused hot-path calls answer exactly what their two plain calls answer, on every SQL backend.

On PostgreSQL they are one pipelined round trip (``store/sql/_fused_calls.py``); elsewhere the two
plain calls.
Also the joined pre-claim read, ``get_run_with_latest_turn``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from agent_store_support import FakeClock

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store import (
    NewMessage,
    NewRun,
    OutboxEntry,
    RunOpening,
    SqlStore,
    StepCompletion,
    UsageEntry,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def sql(sql_url: str) -> Iterator[SqlStore]:
    store = SqlStore.from_url(sql_url, clock=FakeClock())
    yield store
    store.close()


def _seed(store: SqlStore) -> str:
    thread = store.ensure_thread("t1", owner="alice")
    store.create_run(NewRun(id="r1", thread_id=thread.id, agent="a", input="hi", owner="alice"))
    store.append_message(thread.id, NewMessage(key="r1:user:0", role="user", content="hi", run_id="r1"))
    return thread.id


def test_claim_and_load_thread(sql: SqlStore) -> None:
    thread_id = _seed(sql)
    claim, history = sql.claim_step_and_load_thread("r1", "llm:turn:0", thread_id, owner="w1",
                                                    lease_ms=60_000)
    assert claim.outcome == "claimed" and claim.step.attempt == 1 and claim.step.lease_owner == "w1"
    assert history == sql.load_thread_for_turn(thread_id) and [m.content for m in history] == ["hi"]
    assert sql.get_step("r1", "llm:turn:0") == claim.step
    again, none = sql.claim_step_and_load_thread("r1", "llm:turn:0", thread_id, owner="w2", lease_ms=60_000)
    assert again.outcome == "busy" and none is None and again.step.lease_owner == "w1"
    sql.complete_step("r1", "llm:turn:0", claim.step.generation, StepCompletion(result={"ok": 1}))
    done, none = sql.claim_step_and_load_thread("r1", "llm:turn:0", thread_id, owner="w2", lease_ms=60_000)
    assert done.outcome == "completed" and done.step.result == {"ok": 1} and none is None
    with pytest.raises(NotFoundError):
        sql.claim_step_and_load_thread("nope", "llm:turn:0", thread_id, owner="w1", lease_ms=60_000)


def test_claim_and_load_thread_takes_over_an_expired_lease(sql: SqlStore) -> None:
    thread_id = _seed(sql)
    first, _ = sql.claim_step_and_load_thread("r1", "llm:turn:0", thread_id, owner="w1", lease_ms=1_000)
    sql.clock.advance(1_000)  # type: ignore[attr-defined]
    second, history = sql.claim_step_and_load_thread("r1", "llm:turn:0", thread_id, owner="w2",
                                                     lease_ms=1_000)
    assert second.outcome == "claimed" and history is not None
    assert (second.step.attempt, second.step.generation) == (2, first.step.generation + 1)
    sql.clock.advance(1_000)  # type: ignore[attr-defined]
    capped, _ = sql.claim_step_and_load_thread(
        "r1", "llm:turn:0", thread_id, owner="w3", lease_ms=1_000, max_attempts=2
    )
    assert capped.outcome == "exhausted"


def test_complete_and_list_steps(sql: SqlStore) -> None:
    thread_id = _seed(sql)
    claim = sql.claim_step("r1", "tool:x:c1", owner="w1", lease_ms=60_000)
    other = sql.claim_step("r1", "tool:x:c2", owner="w1", lease_ms=60_000)
    completion = StepCompletion(
        result={"output": "ok"},
        messages=[NewMessage(key="r1:tool:1", role="tool", content="ok", run_id="r1", tool_call_id="c1")],
        usage=UsageEntry(actor="alice", model="m", input_tokens=3, run_id="r1", step="tool:x:c1"),
        run_patch={"add_input_tokens": 3},
        thread_patch={"add_input_tokens": 3},
    )
    done, ledger = sql.complete_step_and_list_steps("r1", "tool:x:c1", claim.step.generation, completion)
    assert done
    assert ledger == sql.list_steps("r1")  # read after the completion: this step is in it, completed
    assert {s.name: s.status for s in ledger} == {"tool:x:c1": "completed", "tool:x:c2": "running"}
    assert [m.content for m in sql.list_messages(thread_id)] == ["hi", "ok"]
    assert sql.get_run("r1").input_tokens == 3  # type: ignore[union-attr]
    assert sql.get_thread_by_id(thread_id).input_tokens == 3  # type: ignore[union-attr]
    again, ledger = sql.complete_step_and_list_steps("r1", "tool:x:c1", claim.step.generation, completion)
    assert not again and len(ledger) == 2
    assert [m.content for m in sql.list_messages(thread_id)] == ["hi", "ok"]  # nothing written twice
    assert sql.get_run("r1").input_tokens == 3  # type: ignore[union-attr]
    assert other.outcome == "claimed"


def test_run_with_latest_turn(sql: SqlStore) -> None:
    _seed(sql)
    assert sql.get_run_with_latest_turn("nope") == (None, None)
    run, latest = sql.get_run_with_latest_turn("r1")
    assert run == sql.get_run("r1") and latest is None  # no turn yet
    for n in range(3):
        claim = sql.claim_step("r1", f"llm:turn:{n}", owner="w", lease_ms=60_000)
        sql.complete_step("r1", f"llm:turn:{n}", claim.step.generation,
                          StepCompletion(result={"n": n}, run_patch={"add_turns": 1}))
    run, latest = sql.get_run_with_latest_turn("r1")
    assert run is not None and run.turns == 3
    assert latest == sql.get_step("r1", "llm:turn:2") and latest is not None and latest.result == {"n": 2}


def _start_on_free_thread(sql: SqlStore, run_id: str, owner: str | None = "alice", **thread: Any) -> Any:
    message = NewMessage(key=f"{run_id}:user:0", role="user", content="hi", run_id=run_id)
    opening = RunOpening(message=message, thread_status="running",
                         outbox=(OutboxEntry(run_id, "llm:turn:0", "turn", "a"),))
    return sql.create_run_on_free_thread("t1", NewRun(run_id, "", "a", "hi", owner=owner), opening, **thread)


def test_create_run_on_free_thread(sql: SqlStore) -> None:
    new = _start_on_free_thread(sql, "r1", title="T", initial_state={"k": 1})
    if sql.dialect != "postgresql":  # elsewhere the engine starts the plain way; nothing written
        assert new is None and sql.get_thread("t1") is None
        return
    assert new is not None and new == sql.get_thread("t1")
    assert (new.owner, new.title, new.state, new.agent, new.status, new.active_run_id) == (
        "alice", "T", {"k": 1}, "a", "running", "r1")
    run = sql.get_run("r1")
    assert run is not None
    assert (run.thread_id, run.owner, run.input, run.status) == (new.id, "alice", "hi", "running")
    assert [(m.seq, m.key) for m in sql.list_messages(new.id)] == [(1, "r1:user:0")]
    due = sql.due_outbox(new.created_at + 1, agents=["a"], limit=10)
    assert [(e.run_id, e.step) for e in due] == [("r1", "llm:turn:0")]
    # Held, or queued behind, or another owner's: not free — nothing written, the plain way explains.
    assert _start_on_free_thread(sql, "r2") is None
    sql.release_thread(new.id, "r1")
    assert _start_on_free_thread(sql, "r3", owner="bob") is None
    assert _start_on_free_thread(sql, "r4", owner=None) is None
    sql.create_run(NewRun("q1", new.id, "a", "wait", owner="alice", status="queued"),
                   RunOpening(enqueue=True))
    assert _start_on_free_thread(sql, "r5") is None
    assert [sql.get_run(r) for r in ("r2", "r3", "r4", "r5")] == [None] * 4
    assert [m.key for m in sql.list_messages(new.id)] == ["r1:user:0"]
    assert sql.get_thread("t1") == dataclasses.replace(new, active_run_id=None)
    # Free again: the run is recorded on the existing thread, its message after the thread's last.
    sql.dequeue_run(new.id, "q1")
    again = _start_on_free_thread(sql, "r6")
    assert again is not None and (again.id, again.active_run_id, again.title) == (new.id, "r6", "T")
    assert [(m.seq, m.key) for m in sql.list_messages(new.id)] == [(1, "r1:user:0"), (2, "r6:user:0")]
