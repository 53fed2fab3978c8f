"""Approvals end to end on the harness: hibernate, decide once (from anywhere), resume, recover."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hitl_support import CHARGES, billing_agent, live_leases, manual_harness

from lunora_jobs import (
    ConflictError,
    Lunora,
    NotFoundError,
    final_turn,
    tool_call_turn,
    tool_calls_turn,
)
from lunora_jobs.engine.dispatch import InProcessDispatcher
from lunora_jobs.store import InMemoryStore, StepCompletion
from lunora_jobs.testing import agent_harness


@pytest.fixture(autouse=True)
def _reset() -> None:
    CHARGES.clear()


def test_a_gated_call_hibernates_the_run_with_nothing_queued_and_no_lease() -> None:
    harness = agent_harness(billing_agent(), script=[
        tool_call_turn("c1", "charge_card", {"amount": 9000}), final_turn("Charged."),
    ])
    waiting = harness.run(input="charge 9000", thread_key="t", owner="u7")
    assert waiting.status == "awaiting_input"
    assert harness.thread("t").status == "awaiting_input"
    assert harness.thread("t").active_run_id == waiting.run_id  # it still owns its thread
    # Hibernated: no task for the wait, no step under a live lease, the tool never ran.
    assert [t.step for t in harness.dispatched] == ["llm:turn:0"]
    assert harness.dispatcher._queue == type(harness.dispatcher._queue)()
    assert live_leases(harness, waiting.run_id, now=2**62) == []
    assert CHARGES == [] and len(harness.model.calls) == 1
    # The pending call is recorded with its input.
    call = harness.store.get_tool_call(waiting.run_id, "c1")
    assert call is not None
    assert (call.name, call.input, call.status, call.decision) == (
        "charge_card", {"amount": 9000}, "awaiting_approval", None
    )


def test_approve_from_another_process_runs_the_tool_once() -> None:
    store = InMemoryStore()
    agent = billing_agent()
    script = [tool_call_turn("c1", "charge_card", {"amount": 9000}), final_turn("Charged.")]
    harness = agent_harness(agent, script=script, store=store)
    waiting = harness.run(input="charge 9000", thread_key="t", owner="u7")
    # "Another process": a second app over the same store, with its own dispatcher and engine.
    other = agent_harness(agent, script=script, store=store)
    assert other.app.approvals.resolve("t", "c1", approve=True, viewer="u7") == "applied"
    done = other.result(waiting.run_id)
    assert (done.status, done.stopped, done.text) == ("completed", "final", "Charged.")
    assert CHARGES == [9000]
    call = store.get_tool_call(waiting.run_id, "c1")
    assert call is not None and (call.decision, call.decided_by) == ("approved", "u7")
    # The same decision again is a no-op; a different one is a conflict; the tool ran once.
    assert harness.app.approvals.resolve("t", "c1", approve=True, viewer="u7") == "unchanged"
    with pytest.raises(ConflictError, match="already approved"):
        harness.app.approvals.resolve("t", "c1", approve=False, viewer="u7")
    assert CHARGES == [9000]
    assert [m.role for m in harness.messages("t")] == ["user", "assistant", "tool", "assistant"]


def test_reject_skips_the_tool_and_the_next_turn_sees_why() -> None:
    harness = agent_harness(billing_agent(), script=[
        tool_call_turn("c1", "charge_card", {"amount": 9000}), final_turn("I did not charge you."),
    ])
    waiting = harness.run(input="charge 9000", thread_key="t", owner="u7")
    assert harness.app.approvals.resolve("t", "c1", approve=False, viewer="u7") == "applied"
    done = harness.result(waiting.run_id)
    assert (done.status, done.stopped, done.text) == ("completed", "final", "I did not charge you.")
    assert CHARGES == []
    tool_message = [m for m in harness.messages("t") if m.role == "tool"]
    assert len(tool_message) == 1 and tool_message[0].tool_call_id == "c1"
    assert "rejected" in (tool_message[0].content or "")
    # The second model call was prompted with the rejection as the call's result.
    second_prompt = harness.model.calls[1]
    assert any(m.get("role") == "tool" and "rejected" in str(m.get("content")) for m in second_prompt)


def test_send_event_is_the_primitive_and_validates_its_event() -> None:
    harness = agent_harness(billing_agent(), script=[
        tool_call_turn("c1", "charge_card", {"amount": 9000}), final_turn("ok"),
    ])
    waiting = harness.run(input="charge", thread_key="t")
    client = harness.app.agents.billing
    with pytest.raises(ValueError, match="approval"):
        client.send_event(waiting.run_id, {"type": "poke"})
    with pytest.raises(NotFoundError):
        client.send_event(waiting.run_id, {"type": "approval", "call_id": "nope", "approved": True})
    event = {"type": "approval", "call_id": "c1", "approved": True, "by": "ops"}
    assert client.send_event(waiting.run_id, event) == "applied"
    assert harness.result(waiting.run_id).status == "completed" and CHARGES == [9000]


def test_only_the_gated_call_waits_and_the_free_one_runs_meanwhile() -> None:
    harness = agent_harness(billing_agent(), script=[
        tool_calls_turn([("a", "lookup", {"query": "order"}), ("b", "charge_card", {"amount": 9000})]),
        final_turn("done"),
    ])
    waiting = harness.run(input="go", thread_key="t")
    assert waiting.status == "awaiting_input"
    assert [m.tool_call_id for m in harness.messages("t") if m.role == "tool"] == ["a"]
    assert harness.app.approvals.resolve("t", "b", approve=True, trusted=True) == "applied"
    assert harness.result(waiting.run_id).status == "completed"
    assert [m.tool_call_id for m in harness.messages("t") if m.role == "tool"] == ["a", "b"]


def test_two_deciders_racing_with_the_same_decision_both_succeed_and_the_tool_runs_once() -> None:
    agent = billing_agent()
    script = [tool_call_turn("c1", "charge_card", {"amount": 9000}), final_turn("ok")]
    store = InMemoryStore()
    first = agent_harness(agent, script=script, store=store)
    waiting = first.run(input="charge", thread_key="t", owner="u7")
    apps = [agent_harness(agent, script=script, store=store).app for _ in range(6)]
    results: list[str] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(apps))

    def decide(app: Lunora) -> None:
        barrier.wait()
        try:
            results.append(app.approvals.resolve("t", "c1", approve=True, viewer="u7"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=decide, args=(app,)) for app in apps]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert results.count("applied") >= 1 and set(results) <= {"applied", "unchanged"}
    assert first.result(waiting.run_id).status == "completed"
    assert CHARGES == [9000]


def test_a_decision_whose_resolver_died_is_applied_by_the_sweep() -> None:
    harness = agent_harness(billing_agent(), script=[
        tool_call_turn("c1", "charge_card", {"amount": 9000}), final_turn("ok"),
    ])
    waiting = harness.run(input="charge", thread_key="t")
    # The decision reached the database, then the resolving process died before moving the run on.
    harness.store.decide_tool_call(waiting.run_id, "c1", decision="approved", decided_by="ops")
    assert harness.result(waiting.run_id).status == "awaiting_input"
    harness.app.sweep(grace_ms=0)
    assert harness.result(waiting.run_id).status == "completed"
    assert CHARGES == [9000]


def test_a_stray_tool_task_before_the_decision_never_runs_the_tool() -> None:
    harness, dispatcher = manual_harness(billing_agent(), [
        tool_call_turn("c1", "charge_card", {"amount": 9000}), final_turn("ok"),
    ])
    handle = harness.app.agents.billing.run(input="charge", thread_key="t")
    dispatcher.drain()
    assert harness.result(handle.id).status == "awaiting_input"
    assert harness.app.execute_step(handle.id, "tool:charge_card:c1").status == "waiting"
    assert harness.app.execute_step(handle.id, "approval:c1").status == "waiting"
    assert CHARGES == [] and dispatcher.pending == []
    assert isinstance(dispatcher, InProcessDispatcher)


def test_a_run_that_died_while_hibernating_is_recorded_by_the_sweep() -> None:
    store = InMemoryStore()
    real = store.upsert_tool_call
    calls = {"n": 0}

    def dies_once(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("worker died while hibernating")
        return real(*args, **kwargs)

    store.upsert_tool_call = dies_once  # type: ignore[method-assign]
    harness = agent_harness(billing_agent(), store=store, script=[
        tool_call_turn("c1", "charge_card", {"amount": 9000}), final_turn("ok"),
    ])
    with pytest.raises(RuntimeError):
        harness.run(input="charge", thread_key="t")
    run = store.list_runs()[0]
    # Park records the awaited call before the run reads awaiting_input (a decision sent in between
    # must find it), so a death in between leaves the run running, for the sweep to park again.
    assert run.status == "running" and store.get_tool_call(run.id, "c1") is None
    with pytest.raises(NotFoundError):
        harness.app.approvals.resolve("t", "c1", approve=True, trusted=True)
    harness.app.sweep(grace_ms=0)
    assert harness.app.approvals.resolve("t", "c1", approve=True, trusted=True) == "applied"
    assert harness.result(run.id).status == "completed" and CHARGES == [9000]


def test_a_run_that_died_while_resuming_is_moved_on_by_the_sweep() -> None:
    harness = agent_harness(billing_agent(), script=[
        tool_call_turn("c1", "charge_card", {"amount": 9000}), final_turn("ok"),
    ])
    waiting = harness.run(input="charge", thread_key="t")
    store = harness.store
    # The resolver recorded the decision and the ledger row, then died before waking the run.
    store.decide_tool_call(waiting.run_id, "c1", decision="approved", decided_by="ops")
    claim = store.claim_step(waiting.run_id, "approval:c1", owner="dead", lease_ms=1000)
    store.complete_step(waiting.run_id, "approval:c1", claim.step.generation,
                        StepCompletion(result={"approved": True, "decided_by": "ops"}))
    assert harness.result(waiting.run_id).status == "awaiting_input"
    harness.app.sweep(grace_ms=0)
    assert harness.result(waiting.run_id).status == "completed" and CHARGES == [9000]
