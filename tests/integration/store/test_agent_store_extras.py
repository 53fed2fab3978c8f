"""Contract: tool calls (upsert by provider id) and delayed-run schedules (a claim wins once)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from agent_store_support import FakeClock

from lunora_jobs.store import NewRun

pytestmark = pytest.mark.integration


def test_tool_calls_upsert_and_list(store: Any, clock: FakeClock) -> None:
    thread = store.ensure_thread("t1")
    store.create_run(NewRun(id="r", thread_id=thread.id, agent="a", input=None))
    first = store.upsert_tool_call(thread.id, "r", "call_1", name="charge", input={"amount": 9000})
    assert (first.status, first.input, first.output, first.decision) == (
        "pending",
        {"amount": 9000},
        None,
        None,
    )
    clock.advance(3)
    store.upsert_tool_call(thread.id, "r", "call_2", name="lookup")
    decided = store.upsert_tool_call(
        thread.id, "r", "call_1", name="charge", decision="approved", decided_by="alice",
        decided_at=clock.now, status="approved",
    )  # fmt: skip
    assert (decided.decision, decided.decided_by, decided.decided_at) == ("approved", "alice", clock.now)
    assert decided.input == {"amount": 9000} and decided.created_at == first.created_at
    done = store.upsert_tool_call(
        thread.id, "r", "call_1", name="charge", output={"ok": True}, status="completed"
    )
    assert (done.output, done.status, done.decision) == ({"ok": True}, "completed", "approved")
    assert [c.id for c in store.list_tool_calls("r")] == ["call_1", "call_2"]
    assert store.get_tool_call("r", "nope") is None
    with pytest.raises(ValueError):
        store.upsert_tool_call(thread.id, "r", "call_1", name="charge", colour="red")


def test_due_schedules_are_claimed_once(store: Any, clock: FakeClock) -> None:
    now = clock.now
    for i in range(6):
        store.add_schedule("support", now - 10 + i * 5, {"input": i}, id=f"s{i}")
    assert store.add_schedule("support", now, {"input": "dup"}, id="s0").payload == {"input": 0}  # idempotent
    assert [s.id for s in store.claim_due_schedules(now, 1, "beat-0")] == ["s0"]

    def beat(n: int) -> list[str]:
        return [s.id for s in store.claim_due_schedules(now, 10, f"beat-{n}")]

    with ThreadPoolExecutor(4) as pool:
        won = [sid for ids in pool.map(beat, range(4)) for sid in ids]
    assert sorted(won) == ["s1", "s2"]  # due ones only (s3.. are in the future), each exactly once
    later = store.claim_due_schedules(now + 100, 10, "beat-9")
    assert [s.id for s in later] == ["s3", "s4", "s5"]
    assert all(s.status == "claimed" and s.claimed_by == "beat-9" for s in later)
