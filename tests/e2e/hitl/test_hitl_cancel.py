"""Cancellation on the harness: stop at the next step boundary, never apply a late result."""

from __future__ import annotations

from typing import Any

import pytest
from hitl_support import CHARGES, billing_agent, manual_harness

from lunora_jobs import (
    ConflictError,
    NotFoundError,
    ToolContext,
    define_agent,
    final_turn,
    tool,
    tool_call_turn,
)
from lunora_jobs.testing import Harness, agent_harness


@pytest.fixture(autouse=True)
def _reset() -> None:
    CHARGES.clear()


def test_cancel_between_steps_stops_the_run_and_revokes_its_tasks() -> None:
    harness, dispatcher = manual_harness(billing_agent(), [
        tool_call_turn("c1", "lookup", {"query": "a"}), tool_call_turn("c2", "lookup", {"query": "b"}),
        final_turn("done"),
    ])
    handle = harness.app.agents.billing.run(input="go", thread_key="t", owner="u7")
    assert dispatcher.drain(limit=1) == 1  # turn 0 ran and queued its tool call
    assert [t.step for t in dispatcher.pending] == ["tool:lookup:c1"]
    assert harness.app.agents.billing.cancel(handle.id) is True
    assert dispatcher.revoked == [handle.id] and dispatcher.pending == []
    # A late delivery of the revoked task is refused by the engine too.
    assert harness.app.execute_step(handle.id, "tool:lookup:c1").status == "skipped"
    result = harness.result(handle.id)
    assert (result.status, result.stopped) == ("cancelled", "cancelled")
    thread = harness.thread("t")
    assert (thread.status, thread.active_run_id) == ("cancelled", None)
    assert [m.role for m in harness.messages("t")] == ["user", "assistant"]
    assert len(harness.model.calls) == 1


def test_a_step_executing_when_cancelled_finishes_but_its_result_is_not_applied() -> None:
    box: dict[str, Any] = {}

    @tool
    def slow(query: str, ctx: ToolContext) -> str:
        """Works while someone cancels the run."""
        box["cancelled"] = box["harness"].app.agents.slowpoke.cancel(ctx.run_id)
        box["ran"] = box.get("ran", 0) + 1
        return f"late {query}"

    agent = define_agent(name="slowpoke", model="offline", tools=[slow])
    harness = agent_harness(agent, script=[tool_call_turn("c1", "slow", {"query": "x"}), final_turn("no")])
    box["harness"] = harness
    result = harness.run(input="go", thread_key="t")
    assert box == {"harness": harness, "cancelled": True, "ran": 1}
    assert (result.status, result.stopped) == ("cancelled", "cancelled")
    # The tool's body ran once, but nothing of it landed: no tool message, no next turn.
    assert [m.role for m in harness.messages("t")] == ["user", "assistant"]
    assert len(harness.model.calls) == 1
    step = harness.store.get_step(result.run_id, "tool:slow:c1")
    assert step is not None and step.status != "completed"


def test_a_turn_in_flight_when_cancelled_writes_nothing() -> None:
    harness: list[Harness] = []

    class CancellingModel:
        name = "cancelling"

        def generate(self, messages: Any, **_: Any) -> Any:
            run = harness[0].store.list_runs()[0]
            harness[0].app.agents.chatty.cancel(run.id)
            return final_turn("too late")

    agent = define_agent(name="chatty", model="offline")
    harness.append(agent_harness(agent, model=CancellingModel()))
    result = harness[0].run(input="hi", thread_key="t")
    assert (result.status, result.stopped, result.text) == ("cancelled", "cancelled", None)
    assert [m.role for m in harness[0].messages("t")] == ["user"]
    assert harness[0].thread("t").status == "cancelled"


def test_cancel_of_a_finished_run_is_a_noop() -> None:
    harness = agent_harness(billing_agent(), script=[final_turn("hello")])
    done = harness.run(input="hi", thread_key="t")
    assert harness.app.agents.billing.cancel(done.run_id) is False
    after = harness.result(done.run_id)
    assert (after.status, after.stopped, after.text) == ("completed", "final", "hello")
    assert harness.thread("t").status == "completed"
    with pytest.raises(NotFoundError):
        harness.app.agents.billing.cancel("no-such-run")


def test_cancel_while_awaiting_approval_then_a_decision_is_refused() -> None:
    harness = agent_harness(billing_agent(), script=[
        tool_call_turn("c1", "charge_card", {"amount": 9000}), final_turn("ok"),
    ])
    waiting = harness.run(input="charge", thread_key="t", owner="u7")
    assert harness.app.agents.billing.cancel(waiting.run_id) is True
    assert harness.result(waiting.run_id).status == "cancelled"
    with pytest.raises((ConflictError, NotFoundError)):
        harness.app.approvals.resolve("t", "c1", approve=True, viewer="u7")
    assert CHARGES == []
    # The thread is free again: a new run starts on it.
    assert harness.thread("t").active_run_id is None
