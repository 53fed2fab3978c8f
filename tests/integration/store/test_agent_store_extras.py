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


def test_a_claim_is_a_lease_a_dead_claimer_loses(store: Any, clock: FakeClock) -> None:
    now = clock.now
    store.add_schedule("support", now, {"input": "x"}, id="lease")
    (first,) = store.claim_due_schedules(now, 10, "beat-a", lease_ms=1_000)
    assert (first.attempts, first.run_at, first.due_at) == (1, now + 1_000, now)
    assert store.claim_due_schedules(now + 999, 10, "beat-b", lease_ms=1_000) == []  # held

    def take(n: int) -> list[str]:
        return [s.id for s in store.claim_due_schedules(now + 1_000, 10, f"beat-{n}", lease_ms=1_000)]

    with ThreadPoolExecutor(4) as pool:
        won = [sid for ids in pool.map(take, range(4)) for sid in ids]
    assert won == ["lease"]  # the expired lease is taken over by exactly one claimer
    row = store.get_schedule("lease")
    assert (row.attempts, row.claimed_at, row.due_at) == (2, now + 1_000, now)
    # The first claimer's record is fenced off; the new holder's lands.
    assert not store.finish_schedule("lease", claimed_by="beat-a", claimed_at=now, status="fired",
                                     run_id="r1")
    assert store.finish_schedule("lease", claimed_by=row.claimed_by, claimed_at=now + 1_000, status="fired",
                                 run_id="r1")
    fired = store.get_schedule("lease")
    assert (fired.status, fired.run_id, fired.fired_at) == ("fired", "r1", now)
    assert store.claim_due_schedules(now + 10_000, 10, "beat-z") == []


def test_cron_rows_go_pending_again_and_schedules_list_cancel_reset(store: Any, clock: FakeClock) -> None:
    now = clock.now
    store.add_schedule("ops", now, {"timing": "every 60"}, id="cron:pulse", kind="cron")
    store.add_schedule("support", now + 5, None, id="later")
    assert [s.id for s in store.claim_due_schedules(now, 10, "beat")] == ["cron:pulse"]
    assert store.finish_schedule("cron:pulse", claimed_by="beat", claimed_at=now, status="fired", run_id="r1",
                                 next_due=now + 60_000)
    again = store.get_schedule("cron:pulse")
    assert (again.kind, again.status, again.due_at, again.run_at, again.attempts, again.run_id) == (
        "cron", "pending", now + 60_000, now + 60_000, 0, "r1")
    assert [s.id for s in store.list_schedules()] == ["later", "cron:pulse"]
    assert [s.id for s in store.list_schedules(agent="ops")] == ["cron:pulse"]
    assert store.cancel_schedule("later") and not store.cancel_schedule("later")
    assert [s.id for s in store.list_schedules(status="cancelled")] == ["later"]
    assert not store.reset_schedule("later", due_at=now + 9, payload=None, from_statuses=["pending"])
    assert store.reset_schedule("later", due_at=now + 9, payload={"v": 2}, from_statuses=["cancelled"])
    reset = store.get_schedule("later")
    assert (reset.status, reset.due_at, reset.payload) == ("pending", now + 9, {"v": 2})
    assert store.get_schedule("nope") is None
