"""fork_thread, truncate_from and complete_step are one transaction each: a failure half-way leaves
no trace. A statement is made to fail inside the transaction on the real databases."""

from __future__ import annotations

import pytest
from agent_store_support import Injected, fail_in_statement, fail_on

from lunora_jobs.store import AgentStore, NewMessage, NewRun, StepCompletion, UsageEntry

pytestmark = pytest.mark.integration


def seeded(store: AgentStore) -> tuple[str, list[str]]:
    thread = store.ensure_thread("t1")
    store.create_run(NewRun(id="r", thread_id=thread.id, agent="a", input=None))
    calls = [{"id": "c1", "name": "x", "arguments": {}}]
    written = store.append_messages(
        thread.id,
        [
            NewMessage(key="r:user:0", role="user", content="q"),
            NewMessage(key="r:assistant:1", role="assistant", tool_calls=calls),
            NewMessage(key="r:tool:2", role="tool", content="a", tool_call_id="c1"),
        ],
    )
    store.upsert_tool_call(thread.id, "r", "c1", name="x")  # type: ignore[attr-defined]
    return thread.id, [m.id for m in written]


def test_fork_is_all_or_nothing(store: AgentStore) -> None:
    thread_id, ids = seeded(store)
    with fail_on(store, "INSERT INTO AGENT_MESSAGES"), pytest.raises(Injected):
        store.fork_thread(thread_id, "fork")
    assert store.get_thread("fork") is None  # the thread row inserted first was rolled back
    assert [m.id for m in store.list_messages(thread_id)] == ids
    assert store.fork_thread(thread_id, "fork").key == "fork"


def test_truncate_is_all_or_nothing(store: AgentStore) -> None:
    thread_id, ids = seeded(store)
    with fail_on(store, "DELETE FROM AGENT_MESSAGES"), pytest.raises(Injected):
        store.truncate_from(thread_id, 2)
    assert [m.id for m in store.list_messages(thread_id)] == ids
    assert [c.id for c in store.list_tool_calls("r")] == ["c1"]  # type: ignore[attr-defined]
    assert store.truncate_from(thread_id, 2) == 2
    assert store.list_tool_calls("r") == []  # type: ignore[attr-defined]


def test_complete_step_is_all_or_nothing(store: AgentStore) -> None:
    thread_id, ids = seeded(store)
    claim = store.claim_step("r", "llm:turn:1", owner="w", lease_ms=60_000)
    completion = StepCompletion(
        result="ok",
        messages=[NewMessage(key="r:assistant:3", role="assistant", content="done")],
        usage=UsageEntry(actor="alice", model="m", input_tokens=5),
        run_patch={"add_turns": 1},
    )
    with fail_in_statement(store, "UPDATE AGENT_RUNS") as expected, pytest.raises(expected):
        store.complete_step("r", "llm:turn:1", claim.step.generation, completion)
    step = store.get_step("r", "llm:turn:1")
    assert step is not None and step.status == "running"
    assert [m.id for m in store.list_messages(thread_id)] == ids
    assert store.quota_today("alice") == 0
    assert store.complete_step("r", "llm:turn:1", claim.step.generation, completion)
    assert store.get_run("r").turns == 1  # type: ignore[union-attr]
