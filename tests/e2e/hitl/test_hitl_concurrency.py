"""One run per thread: the reject / replace / queue policies and replays, on the harness."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest
from hitl_support import CHARGES, billing_agent, manual_harness

from lunora_jobs import ConflictError, final_turn, tool_call_turn
from lunora_jobs.store import create_store
from lunora_jobs.testing import agent_harness

GATED = tool_call_turn("c1", "charge_card", {"amount": 9000})


@pytest.fixture(autouse=True)
def _reset() -> None:
    CHARGES.clear()


def test_reject_fails_the_second_run_fast_and_writes_nothing_for_it() -> None:
    harness = agent_harness(billing_agent(), script=[GATED, final_turn("one"), final_turn("two")])
    first = harness.run(input="charge", thread_key="t")
    assert first.status == "awaiting_input"
    with pytest.raises(ConflictError, match="in flight"):
        harness.app.agents.billing.run(input="again", thread_key="t")
    assert [r.id for r in harness.store.list_runs()] == [first.run_id]
    assert harness.thread("t").active_run_id == first.run_id
    assert [m.content for m in harness.messages("t") if m.role == "user"] == ["charge"]


def test_a_replay_of_the_same_run_id_is_not_a_concurrent_run() -> None:
    harness = agent_harness(billing_agent(), script=[GATED, final_turn("one")])
    first = harness.app.agents.billing.run(input="charge", thread_key="t", run_id="run-1")
    again = harness.app.agents.billing.run(input="charge", thread_key="t", run_id="run-1")
    assert again == first
    assert len(harness.store.list_runs()) == 1 and len(harness.messages("t")) == 2
    assert harness.model.calls and len(harness.model.calls) == 1


def test_replace_cancels_the_in_flight_run_and_takes_the_thread() -> None:
    agent = billing_agent(on_concurrent_run="replace")
    harness = agent_harness(agent, script=[GATED, final_turn("replaced it")])
    first = harness.run(input="charge", thread_key="t")
    second = harness.run(input="never mind", thread_key="t")
    assert harness.result(first.run_id).status == "cancelled"
    assert (second.status, second.text) == ("completed", "replaced it")
    assert harness.thread("t").status == "completed" and harness.thread("t").active_run_id is None
    with pytest.raises(ConflictError):  # the replaced run's approval can no longer be given
        harness.app.approvals.resolve("t", "c1", approve=True, trusted=True)
    assert CHARGES == []


def test_queue_starts_waiting_runs_in_arrival_order_when_the_owner_ends() -> None:
    agent = billing_agent(on_concurrent_run="queue")
    harness = agent_harness(agent, script=[GATED, final_turn("one"), final_turn("two"), final_turn("three")])
    first = harness.run(input="q1", thread_key="t")
    second = harness.run(input="q2", thread_key="t")
    third = harness.run(input="q3", thread_key="t")
    assert [first.status, second.status, third.status] == ["awaiting_input", "queued", "queued"]
    # Queued runs wrote nothing to the transcript yet (they would interleave with the owner's turns).
    assert [m.content for m in harness.messages("t") if m.role == "user"] == ["q1"]
    assert harness.app.approvals.resolve("t", "c1", approve=True, trusted=True) == "applied"
    texts = [harness.result(r.run_id).text for r in (first, second, third)]
    assert texts == ["one", "two", "three"]
    assert [m.content for m in harness.messages("t") if m.role == "user"] == ["q1", "q2", "q3"]
    assert harness.store.queued_runs(harness.thread("t").id) == []
    assert harness.thread("t").active_run_id is None


def test_a_cancelled_queued_run_leaves_the_line_and_the_rest_still_start() -> None:
    agent = billing_agent(on_concurrent_run="queue")
    harness = agent_harness(agent, script=[GATED, final_turn("one"), final_turn("three")])
    first = harness.run(input="q1", thread_key="t")
    second = harness.run(input="q2", thread_key="t")
    third = harness.run(input="q3", thread_key="t")
    assert harness.app.agents.billing.cancel(second.run_id) is True
    assert harness.thread("t").active_run_id == first.run_id  # cancelling a queued run frees nothing
    harness.app.approvals.resolve("t", "c1", approve=True, trusted=True)
    assert [harness.result(r.run_id).status for r in (first, second, third)] == [
        "completed", "cancelled", "completed"
    ]
    assert [m.content for m in harness.messages("t") if m.role == "user"] == ["q1", "q3"]


def test_the_queue_survives_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    agent = billing_agent(on_concurrent_run="queue")
    script = [GATED, final_turn("one"), final_turn("two")]
    before = agent_harness(agent, script=script, store=create_store(url))
    first = before.run(input="q1", thread_key="t")
    second = before.run(input="q2", thread_key="t")
    assert second.status == "queued"
    # A new process: fresh app, fresh store object, same database.
    after = agent_harness(agent, script=script, store=create_store(url))
    assert after.app.approvals.resolve("t", "c1", approve=True, trusted=True) == "applied"
    assert [after.result(r.run_id).text for r in (first, second)] == ["one", "two"]


def test_the_sweep_promotes_a_queue_whose_owner_died_before_handing_over() -> None:
    agent = billing_agent(on_concurrent_run="queue")
    harness, dispatcher = manual_harness(agent, [final_turn("one"), final_turn("two")])
    first = harness.app.agents.billing.run(input="q1", thread_key="t")
    second = harness.app.agents.billing.run(input="q2", thread_key="t")
    assert harness.app.agents.billing.status(second.id) == "queued"
    # The owner "crashed" after its end was recorded but before promoting: simulate by ending it
    # directly in the store, the way its last write would have.
    thread = harness.thread("t")
    harness.store.update_run(first.id, status="completed", stopped="final")
    assert harness.thread("t").active_run_id == first.id
    harness.app.sweep(grace_ms=0)
    dispatcher.drain()
    assert harness.app.agents.billing.status(second.id) == "completed"
    assert harness.store.queued_runs(thread.id) == []


def test_simultaneous_starts_under_queue_yield_one_owner_and_an_uninterleaved_transcript() -> None:
    agent = billing_agent(on_concurrent_run="queue")
    harness, dispatcher = manual_harness(agent, [final_turn(f"answer {i}") for i in range(10)])
    barrier = threading.Barrier(10)
    handles: list[str] = []

    def start(n: int) -> None:
        barrier.wait()
        handles.append(harness.app.agents.billing.run(input=f"q{n}", thread_key="t").id)

    threads = [threading.Thread(target=start, args=(n,)) for n in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    statuses = Counter(harness.app.agents.billing.status(h) for h in handles)
    assert statuses == {"running": 1, "queued": 9}
    owner = harness.thread("t").active_run_id
    queue = harness.store.queued_runs(harness.thread("t").id)
    dispatcher.drain()
    assert {harness.app.agents.billing.status(h) for h in handles} == {"completed"}
    # Runs ran one at a time, owner first, then in queue order: each run's messages are contiguous.
    order = [m.run_id for m in harness.messages("t")]
    runs_in_order = list(dict.fromkeys(order))
    assert runs_in_order == [owner, *queue]
    assert all(order[i] == order[i + 1] for i in range(0, len(order), 2))


def test_twenty_simultaneous_starts_under_reject_yield_exactly_one_owner() -> None:
    harness, _ = manual_harness(billing_agent(), [final_turn("one")])
    barrier = threading.Barrier(20)
    outcomes: list[str] = []

    def start(n: int) -> None:
        barrier.wait()
        try:
            outcomes.append(harness.app.agents.billing.run(input=f"q{n}", thread_key="t").id)
        except ConflictError:
            outcomes.append("conflict")

    threads = [threading.Thread(target=start, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    owners = [o for o in outcomes if o != "conflict"]
    assert len(owners) == 1 and outcomes.count("conflict") == 19
    assert harness.thread("t").active_run_id == owners[0]
    assert [r.id for r in harness.store.list_runs()] == owners
