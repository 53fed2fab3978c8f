"""A run starts in one transaction (``create_run(run, RunOpening(...))``): the run row, its user message
with its thread's status, and the outbox rows of its first dispatch — or its queue row. The outbox is
read by the sweep (``due_outbox``: the sweeping app's agents only, oldest first) and cleared once sent.
Agent declarations (``declare_agents``) tell the sweep which runs no live worker serves
(``undeclared_runs``)."""

from __future__ import annotations

import pytest
from agent_store_support import FakeClock, fail_in_statement

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store import AgentStore, NewMessage, NewRun, OutboxEntry, RunOpening

pytestmark = pytest.mark.integration


def _opening(run_id: str, agent: str = "a") -> RunOpening:
    return RunOpening(
        message=NewMessage(key=f"{run_id}:user:0", role="user", content="hi", run_id=run_id),
        thread_status="running",
        outbox=(OutboxEntry(run_id, "llm:turn:0", "turn", agent),
                OutboxEntry(run_id, "memory:read", "memory", agent)),
    )


def test_a_start_writes_run_message_status_and_outbox_together(store: AgentStore, clock: FakeClock) -> None:
    thread = store.ensure_thread("t1")
    run = store.create_run(NewRun("r1", thread.id, "a", {"input": "hi"}), _opening("r1"))

    assert run.status == "running"
    assert [(m.key, m.content) for m in store.list_messages(thread.id)] == [("r1:user:0", "hi")]
    after = store.get_thread_by_id(thread.id)
    assert after is not None and after.status == "running"
    due = store.due_outbox(clock.now, agents=["a"], limit=10)
    assert {(e.run_id, e.step, e.kind, e.agent) for e in due} == {
        ("r1", "llm:turn:0", "turn", "a"), ("r1", "memory:read", "memory", "a")}
    assert all(e.created_at == run.created_at for e in due)

    # Idempotent: the same start again adds nothing and returns the stored run.
    clock.advance(1_000)
    again = store.create_run(NewRun("r1", thread.id, "a", {"input": "other"}), _opening("r1"))
    assert (again.id, again.input, again.created_at) == ("r1", {"input": "hi"}, run.created_at)
    assert len(store.list_messages(thread.id)) == 1
    assert len(store.due_outbox(clock.now, agents=["a"], limit=10)) == 2

    with pytest.raises(NotFoundError):  # no such thread: nothing written
        store.create_run(NewRun("r2", "no-such-thread", "a", {}), _opening("r2"))
    assert store.get_run("r2") is None


def test_due_outbox_is_per_agent_oldest_first_and_cleared_once_sent(
    store: AgentStore, clock: FakeClock,
) -> None:
    for i, agent in enumerate(("a", "b", "a")):
        thread = store.ensure_thread(f"t{i}")
        store.create_run(NewRun(f"r{i}", thread.id, agent, {}),
                         RunOpening(outbox=(OutboxEntry(f"r{i}", "llm:turn:0", "turn", agent),)))
        clock.advance(1_000)

    assert [e.run_id for e in store.due_outbox(clock.now, agents=["a"], limit=10)] == ["r0", "r2"]
    assert [e.run_id for e in store.due_outbox(clock.now, agents=["a", "b"], limit=2)] == ["r0", "r1"]
    # Only rows created at or before the cutoff (a start still sending its own is left alone).
    older = store.due_outbox(clock.now - 1_500, agents=["a", "b"], limit=10)
    assert [e.run_id for e in older] == ["r0", "r1"]
    assert store.due_outbox(clock.now, agents=["c"], limit=10) == []

    assert store.clear_outbox([("r0", "llm:turn:0"), ("r2", "llm:turn:0"), ("r9", "x")]) == 2
    assert [e.run_id for e in store.due_outbox(clock.now, agents=["a", "b"], limit=10)] == ["r1"]
    assert store.clear_outbox([]) == 0


def test_a_queued_start_takes_its_place_in_the_queue_in_the_same_write(store: AgentStore) -> None:
    thread = store.ensure_thread("t1")
    store.create_run(NewRun("r1", thread.id, "a", {}, status="queued"), RunOpening(enqueue=True))
    store.create_run(NewRun("r2", thread.id, "a", {}, status="queued"), RunOpening(enqueue=True))
    assert store.queued_runs(thread.id) == ["r1", "r2"]


def test_outbox_rows_go_with_their_thread(store: AgentStore, clock: FakeClock) -> None:
    thread = store.ensure_thread("t1")
    store.create_run(NewRun("r1", thread.id, "a", {}), _opening("r1"))
    store.delete_thread(thread.id)
    assert store.due_outbox(clock.now, agents=["a"], limit=10) == []


@pytest.mark.parametrize("failing", ["INSERT INTO AGENT_OUTBOX", "INSERT INTO AGENT_MESSAGES"])
def test_a_start_that_fails_half_way_records_nothing(
    store: AgentStore, clock: FakeClock, failing: str,
) -> None:
    thread = store.ensure_thread("t1")
    with fail_in_statement(store, failing) as expected, pytest.raises(expected):
        store.create_run(NewRun("r1", thread.id, "a", {}), _opening("r1"))

    assert store.get_run("r1") is None
    assert store.list_messages(thread.id) == []
    after = store.get_thread_by_id(thread.id)
    assert after is not None and after.status == "idle"
    assert store.due_outbox(clock.now, agents=["a"], limit=10) == []


def test_undeclared_runs_are_unclaimed_quiet_runs_no_live_declaration_names(
    store: AgentStore, clock: FakeClock,
) -> None:
    thread = store.ensure_thread("t1")
    for run_id, agent in (("ghost", "ghost"), ("served", "served"), ("stale", "stale"), ("claimed", "ghost")):
        store.create_run(NewRun(run_id, thread.id, agent, {}))
    store.claim_step("claimed", "llm:turn:0", owner="w", lease_ms=1_000)
    store.declare_agents(["stale"])
    clock.advance(60_000)
    store.declare_agents(["served", "served"])
    store.create_run(NewRun("young", thread.id, "ghost", {}))

    assert store.declared_agents(clock.now - 1_000) == {"served": clock.now}
    assert set(store.declared_agents(0)) == {"served", "stale"}
    # Quiet since 30 s ago, and no declaration seen in the last 30 s: ghost (never declared) and
    # stale (declared a minute ago). Not the claimed run, not the young one, not the served one.
    cutoff = clock.now - 30_000
    assert [r.id for r in store.undeclared_runs(cutoff, cutoff, limit=10)] == ["ghost", "stale"]
    assert [r.id for r in store.undeclared_runs(cutoff, cutoff, limit=1)] == ["ghost"]
    store.declare_agents(["stale"])
    assert [r.id for r in store.undeclared_runs(cutoff, cutoff, limit=10)] == ["ghost"]
    store.update_run("ghost", status="failed")
    assert store.undeclared_runs(cutoff, cutoff, limit=10) == []
