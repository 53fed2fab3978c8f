"""Contract: messages — seq order, idempotent append, windows, fork, truncate, cascade, payload size."""

from __future__ import annotations

from typing import Any

import pytest
from agent_store_support import FakeClock

from lunora_jobs.errors import ConflictError, NotFoundError
from lunora_jobs.store import AgentStore, NewMessage, NewRun, StepCompletion, UsageEntry

pytestmark = pytest.mark.integration


def msg(run: str, role: str, pos: int, content: str | None = None, **extra: Any) -> NewMessage:
    return NewMessage(
        key=f"{run}:{role}:{pos}", role=role, content=content or f"{role}-{pos}", run_id=run, **extra
    )


def test_seq_orders_messages_written_in_the_same_millisecond(store: AgentStore, clock: FakeClock) -> None:
    thread = store.ensure_thread("t1")
    clock.advance(10)
    written = [store.append_message(thread.id, msg("r1", "user", i)) for i in range(12)]
    assert [m.seq for m in written] == list(range(1, 13))
    assert len({m.created_at for m in written}) == 1  # one millisecond: only seq can order them
    assert [m.key for m in store.list_messages(thread.id)] == [f"r1:user:{i}" for i in range(12)]
    assert store.get_thread_by_id(thread.id).updated_at == thread.updated_at + 10  # type: ignore[union-attr]


def test_append_is_idempotent_on_key(store: AgentStore) -> None:
    thread = store.ensure_thread("t1")
    first = store.append_message(thread.id, msg("r1", "user", 0, "hello"))
    replay = store.append_message(thread.id, msg("r1", "user", 0, "changed on replay"))
    assert replay == first
    batch = store.append_messages(
        thread.id,
        [msg("r1", "assistant", 1), msg("r1", "user", 0), msg("r1", "tool", 2), msg("r1", "tool", 2)],
    )
    assert [m.key for m in batch] == ["r1:assistant:1", "r1:user:0", "r1:tool:2", "r1:tool:2"]
    assert batch[1] == first
    listed = store.list_messages(thread.id)
    assert [m.key for m in listed] == ["r1:user:0", "r1:assistant:1", "r1:tool:2"]
    assert [m.seq for m in listed] == sorted(m.seq for m in listed)
    assert listed[0].content == "hello"


def test_payload_fields_round_trip(store: AgentStore) -> None:
    thread = store.ensure_thread("t1")
    big = "é" * 100_000  # past MySQL TEXT's 64 KB: needs LONGTEXT
    calls = [{"id": "call_1", "name": "lookup", "arguments": {"q": "x"}}]
    stored = store.append_message(
        thread.id,
        NewMessage(
            key="r:assistant:0",
            role="assistant",
            content=big,
            run_id="r",
            tool_calls=calls,
            name="bot",
            metadata={"lang": "fr"},
        ),
    )
    tool = store.append_message(
        thread.id, NewMessage(key="r:tool:1", role="tool", content="42", tool_call_id="call_1")
    )
    got = store.list_messages(thread.id)
    assert got[0] == stored and got[1] == tool
    assert (got[0].content, got[0].tool_calls, got[0].metadata, got[0].name) == (
        big,
        calls,
        {"lang": "fr"},
        "bot",
    )
    assert got[1].tool_call_id == "call_1"


def test_append_to_missing_thread_raises(store: AgentStore) -> None:
    with pytest.raises(NotFoundError):
        store.append_message("missing", msg("r", "user", 0))


def test_load_thread_for_turn_returns_newest_window_oldest_first(store: AgentStore) -> None:
    thread = store.ensure_thread("t1")
    assert not store.has_assistant_message(thread.id)
    store.append_messages(thread.id, [msg("r", "user" if i % 2 == 0 else "assistant", i) for i in range(7)])
    window = store.load_thread_for_turn(thread.id, message_limit=3)
    assert [m.key for m in window] == ["r:user:4", "r:assistant:5", "r:user:6"]
    assert len(store.load_thread_for_turn(thread.id)) == 7
    assert store.load_thread_for_turn(thread.id, message_limit=0) == []
    assert store.has_assistant_message(thread.id)


def test_fork_copies_up_to_seq_under_fresh_ids(store: AgentStore) -> None:
    thread = store.ensure_thread("t1", owner="alice", model="m", initial_state={"k": 1})
    original = store.append_messages(thread.id, [msg("r", "user", i) for i in range(5)])
    fork = store.fork_thread(thread.id, "t1-fork", upto_seq=original[2].seq)
    assert (fork.owner, fork.model, fork.state, fork.key) == ("alice", "m", {"k": 1}, "t1-fork")
    copied = store.list_messages(fork.id)
    assert [m.key for m in copied] == ["r:user:0", "r:user:1", "r:user:2"]
    assert {m.id for m in copied}.isdisjoint({m.id for m in original})
    assert [m.seq for m in copied] == [m.seq for m in original[:3]]
    # The fork appends after the copied seqs; the source is untouched.
    nxt = store.append_message(fork.id, msg("r2", "user", 0))
    assert nxt.seq > copied[-1].seq
    assert len(store.list_messages(thread.id)) == 5
    with pytest.raises(ConflictError):
        store.fork_thread(thread.id, "t1-fork")
    whole = store.fork_thread(thread.id, "t1-all", owner="bob")
    assert whole.owner == "bob" and len(store.list_messages(whole.id)) == 5


def test_truncate_from_removes_messages_and_their_tool_calls(store: AgentStore) -> None:
    thread = store.ensure_thread("t1")
    store.create_run(NewRun(id="r", thread_id=thread.id, agent="a", input=None))
    calls = [{"id": "call_a", "name": "x", "arguments": {}}, {"id": "call_b", "name": "x", "arguments": {}}]
    kept = store.append_messages(
        thread.id,
        [
            msg("r", "user", 0),
            msg("r", "assistant", 1, tool_calls=[{"id": "call_keep", "name": "x", "arguments": {}}]),
            msg("r", "tool", 2, tool_call_id="call_keep"),
        ],
    )
    doomed = store.append_messages(
        thread.id, [msg("r", "assistant", 3, tool_calls=calls), msg("r", "tool", 4, tool_call_id="call_a")]
    )
    for call in ("call_keep", "call_a", "call_b"):
        store.upsert_tool_call(thread.id, "r", call, name="x", input={"n": 1})  # type: ignore[attr-defined]
    assert store.truncate_from(thread.id, doomed[0].seq) == 2
    assert store.list_messages(thread.id) == kept
    assert [c.id for c in store.list_tool_calls("r")] == ["call_keep"]  # type: ignore[attr-defined]
    again = store.append_message(thread.id, msg("r", "assistant", 3))  # the key is free again
    assert again.seq > kept[-1].seq


def test_delete_thread_cascades_to_everything_it_owns(store: AgentStore) -> None:
    thread = store.ensure_thread("t1", owner="alice")
    keep = store.ensure_thread("t2", owner="alice")
    for t in (thread, keep):
        run_id = f"run-{t.key}"
        store.create_run(NewRun(id=run_id, thread_id=t.id, agent="a", input="hi"))
        claim = store.claim_step(run_id, "llm:turn:0", owner="w", lease_ms=1000)
        store.complete_step(
            run_id,
            "llm:turn:0",
            claim.step.generation,
            StepCompletion(
                result={"ok": True},
                messages=[msg(run_id, "assistant", 1)],
                usage=UsageEntry(actor="alice", model="m", input_tokens=10, output_tokens=5, thread_id=t.id),
            ),
        )
        store.upsert_tool_call(t.id, run_id, "call_1", name="x")  # type: ignore[attr-defined]
    assert store.quota_today("alice") == 30
    store.delete_thread(thread.id)
    assert store.get_thread("t1") is None
    assert store.list_messages(thread.id) == []
    assert store.get_run("run-t1") is None
    assert store.get_step("run-t1", "llm:turn:0") is None
    assert store.list_tool_calls("run-t1") == []  # type: ignore[attr-defined]
    assert store.quota_today("alice") == 15
    assert len(store.list_messages(keep.id)) == 1 and store.get_step("run-t2", "llm:turn:0") is not None
