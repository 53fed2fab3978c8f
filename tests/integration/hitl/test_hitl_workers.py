"""Approvals, cancellation and concurrency policies on real Celery workers (a private Redis + Postgres)."""

from __future__ import annotations

import pytest
from hitl_fleet import HitlFleet

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _idle(fleet: HitlFleet, run_id: str) -> bool:
    live = [s.name for s in fleet.app.store.list_steps(run_id)
            if s.status == "running" and s.lease_expires_at > fleet.app.store.clock()]
    return fleet.broker_backlog() == {"queued": 0, "unacked": 0} and not live


def test_an_approval_leaves_the_worker_idle_and_an_approval_from_elsewhere_runs_the_tool_once(
    fleet: HitlFleet,
) -> None:
    fleet.start_worker()
    handle = fleet.app.agents.payer.run(input="charge 9000", thread_key="t-approve", owner="u7")
    run = fleet.wait_status(handle.id, "awaiting_input")
    # Hibernated: nothing in the broker, no live lease (no step in progress), the tool never ran.
    fleet.wait_for("the worker to go idle", lambda: _idle(fleet, handle.id), timeout=15)
    assert fleet.app.threads.get("t-approve", viewer="u7").status == "awaiting_input"
    assert fleet.redis.llen(fleet.key("charges")) == 0
    assert [p.tool_call_id for p in fleet.app.approvals.pending("t-approve", viewer="u7")] == ["charge-9000"]
    # The decision comes from another process (an API server, say).
    out = fleet.in_other_process(
        "print(app.approvals.resolve('t-approve', 'charge-9000', approve=True, viewer='u7'))"
    )
    assert out == "applied"
    run = fleet.wait_status(handle.id, "completed", "failed")
    assert (run.status, run.result["text"]) == ("completed", "saw: charged 9000.0")
    assert fleet.redis.lrange(fleet.key("charges"), 0, -1) == ["tool:charge_card:charge-9000"]
    # Deciding again: the same decision is a no-op, a different one a conflict; still one charge.
    assert fleet.in_other_process(
        "print(app.approvals.resolve('t-approve', 'charge-9000', approve=True, viewer='u7'))"
    ) == "unchanged"
    from lunora_jobs.errors import ConflictError

    with pytest.raises(ConflictError):
        fleet.app.approvals.resolve("t-approve", "charge-9000", approve=False, viewer="u7")
    assert fleet.redis.llen(fleet.key("charges")) == 1


def test_a_rejection_is_persisted_and_the_next_turn_recovers(fleet: HitlFleet) -> None:
    fleet.start_worker()
    handle = fleet.app.agents.payer.run(input="charge 7000", thread_key="t-reject", owner="u7")
    fleet.wait_status(handle.id, "awaiting_input")
    fleet.in_other_process("app.approvals.resolve('t-reject', 'charge-7000', approve=False, viewer='u7')")
    run = fleet.wait_status(handle.id, "completed", "failed")
    assert run.status == "completed"
    assert run.result["text"].startswith("saw: Tool call rejected") or "rejected" in run.result["text"]
    assert fleet.redis.llen(fleet.key("charges")) == 0
    roles = [m.role for m in fleet.app.threads.messages("t-reject", viewer="u7")]
    assert roles == ["user", "assistant", "tool", "assistant"]


def test_cancel_mid_run_abandons_the_executing_step_and_stops_the_run(fleet: HitlFleet) -> None:
    fleet.start_worker()
    handle = fleet.app.agents.payer.run(input="block-then-record x", thread_key="t-cancel")
    fleet.wait_for("the blocking tool to start", lambda: fleet.redis.llen(fleet.key("entered")) == 1)
    assert fleet.app.agents.payer.cancel(handle.id) is True
    assert fleet.app.agents.payer.cancel(handle.id) is False  # already over: a no-op
    fleet.release()
    run = fleet.wait_status(handle.id, "cancelled")
    fleet.wait_for("the worker to go idle", lambda: _idle(fleet, handle.id), timeout=15)
    assert run.stopped == "cancelled"
    # The tool finished its body, but its result was not applied and no further step ran.
    assert [m.role for m in fleet.app.threads.messages("t-cancel")] == ["user", "assistant"]
    assert fleet.redis.llen(fleet.key("records")) == 0
    step = fleet.app.store.get_step(handle.id, "tool:block:block-then-record-x")
    assert step is not None and step.status != "completed"
    thread = fleet.app.threads.get("t-cancel")
    assert (thread.status, thread.active_run_id) == ("cancelled", None)


def test_replace_cancels_the_in_flight_run_and_takes_the_thread(fleet: HitlFleet) -> None:
    fleet.start_worker()
    first = fleet.app.agents.replacer.run(input="block a", thread_key="t-replace")
    fleet.wait_for("the first run's tool to start", lambda: fleet.redis.llen(fleet.key("entered")) == 1)
    second = fleet.app.agents.replacer.run(input="hello", thread_key="t-replace")
    assert fleet.app.agents.replacer.status(first.id) == "cancelled"
    fleet.release()
    done = fleet.wait_status(second.id, "completed", "failed")
    assert (done.status, done.result["text"]) == ("completed", "answer to hello")
    assert fleet.wait_status(first.id, "cancelled").stopped == "cancelled"
    texts = [m.content for m in fleet.app.threads.messages("t-replace") if m.role != "tool"]
    assert "released a" not in " ".join(str(t) for t in texts)
    assert fleet.app.threads.get("t-replace").active_run_id is None


def test_queued_runs_start_in_arrival_order_and_survive_a_restart(fleet: HitlFleet) -> None:
    worker = fleet.start_worker()
    first = fleet.app.agents.queuer.run(input="charge 9000", thread_key="t-queue")
    fleet.wait_status(first.id, "awaiting_input")
    later = [fleet.app.agents.queuer.run(input=f"hi {n}", thread_key="t-queue") for n in (2, 3, 4)]
    assert [fleet.app.agents.queuer.status(h.id) for h in later] == ["queued"] * 3
    # Restart everything but the database: the worker, and the producer (a new app object).
    worker.stop()
    fleet.start_worker()
    fleet.in_other_process("app.approvals.resolve('t-queue', 'charge-9000', approve=True)")
    for handle in [first, *later]:
        assert fleet.wait_status(handle.id, "completed", "failed").status == "completed"
    users = [m.content for m in fleet.app.threads.messages("t-queue") if m.role == "user"]
    assert users == ["charge 9000", "hi 2", "hi 3", "hi 4"]
    finals = [m.content for m in fleet.app.threads.messages("t-queue") if m.role == "assistant" and m.content]
    assert finals == ["saw: charged 9000.0", "answer to hi 2", "answer to hi 3", "answer to hi 4"]


def test_cancel_before_any_worker_consumed_drops_the_queued_step(fleet: HitlFleet) -> None:
    handle = fleet.app.agents.payer.run(input="hello", thread_key="t-revoke")
    assert fleet.broker_backlog()["queued"] == 1  # turn 0 waits in the broker
    assert fleet.app.agents.payer.cancel(handle.id) is True
    fleet.start_worker()
    fleet.wait_for("the broker to drain", lambda: fleet.broker_backlog() == {"queued": 0, "unacked": 0})
    run = fleet.wait_status(handle.id, "cancelled")
    assert (run.stopped, run.turns) == ("cancelled", 0)
    assert fleet.app.store.list_steps(handle.id) == []  # no step of a cancelled run ever ran
    assert [m.role for m in fleet.app.threads.messages("t-revoke")] == ["user"]
