"""Store contract for approvals, cancellation and run queues, on every backend."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any

import pytest
from race_workers import decide_worker, dequeue_worker

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store import AgentStore, NewMessage, NewRun, SqlStore, StepCompletion

OPEN = ("queued", "running", "awaiting_input")


def _run(store: AgentStore, key: str = "t", run_id: str = "r1", status: str = "running") -> str:
    thread = store.ensure_thread(key)
    store.create_run(NewRun(run_id, thread.id, "agent", {"input": "x"}, status=status))
    return thread.id


def test_transition_run_is_a_compare_and_set(store: AgentStore) -> None:
    _run(store)
    assert store.transition_run("r1", OPEN, status="cancelled", stopped="cancelled") is True
    # A finisher racing the cancel loses: the run stays cancelled.
    finished = store.transition_run("r1", OPEN, status="completed", stopped="final", result={"text": "x"})
    assert finished is False
    run = store.get_run("r1")
    assert run is not None and (run.status, run.stopped, run.result) == ("cancelled", "cancelled", None)
    assert store.transition_run("missing", OPEN, status="cancelled") is False
    _run(store, "t2", "r2")
    assert store.transition_run("r2", ("running",), status="awaiting_input", add_turns=1) is True
    run2 = store.get_run("r2")
    assert run2 is not None and (run2.status, run2.turns) == ("awaiting_input", 1)


def test_a_cancelled_run_applies_no_step_result(store: AgentStore) -> None:
    thread_id = _run(store)
    claim = store.claim_step("r1", "tool:x:c1", owner="w", lease_ms=60_000)
    assert claim.outcome == "claimed"
    assert store.transition_run("r1", OPEN, status="cancelled") is True
    completion = StepCompletion(
        result={"output": "late"}, messages=[NewMessage(key="r1:tool:0.0", role="tool", content="late")],
        thread_patch={"status": "completed"},
    )
    assert store.complete_step("r1", "tool:x:c1", claim.step.generation, completion) is False
    step = store.get_step("r1", "tool:x:c1")
    assert step is not None and step.status == "running"
    assert store.list_messages(thread_id) == []
    thread = store.get_thread_by_id(thread_id)
    assert thread is not None and thread.status == "idle"


def test_a_decision_is_recorded_once(store: AgentStore) -> None:
    thread_id = _run(store)
    store.upsert_tool_call(
        thread_id, "r1", "c1", name="charge", input={"amount": 9000}, status="awaiting_approval"
    )
    first = store.decide_tool_call("r1", "c1", decision="approved", decided_by="alice")
    assert (first.decision, first.decided_by, first.status) == ("approved", "alice", "approved")
    assert first.decided_at == first.updated_at and first.decided_at is not None
    second = store.decide_tool_call("r1", "c1", decision="rejected", decided_by="bob")
    assert (second.decision, second.decided_by, second.decided_at) == ("approved", "alice", first.decided_at)
    with pytest.raises(NotFoundError):
        store.decide_tool_call("r1", "nope", decision="approved")
    with pytest.raises(ValueError, match="decision"):
        store.decide_tool_call("r1", "c1", decision="maybe")
    # A call that never waited for approval takes no decision.
    store.upsert_tool_call(thread_id, "r1", "c2", name="lookup", input={})
    assert store.decide_tool_call("r1", "c2", decision="approved").decision is None


def test_the_run_queue_is_fifo_idempotent_and_taken_once(store: AgentStore) -> None:
    thread_id = _run(store)
    other_id = _run(store, "t2", "r9")
    for run_id in ("r3", "r1", "r2"):  # the clock is frozen: arrival order alone must decide
        store.enqueue_run(thread_id, run_id)
    store.enqueue_run(thread_id, "r3")
    store.enqueue_run(other_id, "r9")
    assert store.queued_runs(thread_id) == ["r3", "r1", "r2"]
    assert store.queued_runs(thread_id, limit=1) == ["r3"]
    assert sorted(store.queued_threads()) == sorted([thread_id, other_id])
    assert store.dequeue_run(thread_id, "r3") is True
    assert store.dequeue_run(thread_id, "r3") is False
    assert store.queued_runs(thread_id) == ["r1", "r2"]
    store.delete_thread(other_id)
    assert store.queued_threads() == [thread_id]


def _race(url: str, target: Callable[..., None], arg: str, workers: int) -> list[Any]:
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=target, args=(url, arg, i, barrier, results)) for i in range(workers)]
    for p in procs:
        p.start()
    out = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    return out


@pytest.mark.parametrize("backend", ["postgres", "mariadb", "sqlite"], indirect=True)
def test_racing_deciders_in_separate_processes_all_see_one_decision(
    store: AgentStore, store_url: str
) -> None:
    assert isinstance(store, SqlStore)
    thread_id = _run(store)
    store.upsert_tool_call(thread_id, "r1", "c1", name="charge", input={}, status="awaiting_approval")
    outcomes = _race(store_url, decide_worker, "r1", 6)
    assert len(set(outcomes)) == 1, outcomes
    record = store.get_tool_call("r1", "c1")
    assert record is not None and (record.decision, record.decided_by) == outcomes[0]


@pytest.mark.parametrize("backend", ["postgres", "mariadb", "sqlite"], indirect=True)
def test_racing_promoters_dequeue_the_head_exactly_once(store: AgentStore, store_url: str) -> None:
    thread_id = _run(store)
    store.enqueue_run(thread_id, "r1")
    assert sorted(_race(store_url, dequeue_worker, thread_id, 6)) == [False] * 5 + [True]
