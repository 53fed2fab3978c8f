"""Blocking approvals: the run hibernates on approval:<call_id> and a decision moves it on."""

from __future__ import annotations

from typing import Any

import pytest

from lunora_jobs import (
    ConflictError,
    NotFoundError,
    define_agent,
    final_turn,
    tool,
    tool_call_turn,
    tool_calls_turn,
)
from lunora_jobs.testing import Harness, agent_harness

CHARGES: list[float] = []


@tool(needs_approval=lambda i: i["amount"] > 5000)
def charge_card(amount: float, ctx: Any) -> str:
    """Charge the customer's saved card."""
    CHARGES.append(amount)
    return f"charged {amount}"


def billing(script: list[Any]) -> Harness:
    CHARGES.clear()
    agent = define_agent(name="billing", model="offline", tools=[charge_card])
    return agent_harness(agent, script=script)


def test_small_amounts_run_without_approval() -> None:
    harness = billing([tool_call_turn("c1", "charge_card", {"amount": 10}), final_turn("done")])
    assert harness.run(input="charge 10", thread_key="t").stopped == "final"
    assert CHARGES == [10]


def test_approve_runs_the_tool_and_finishes_the_run() -> None:
    harness = billing([tool_call_turn("c1", "charge_card", {"amount": 9000}), final_turn("Charged.")])
    waiting = harness.run(input="charge 9000", thread_key="t", owner="user-7")
    assert waiting.status == "awaiting_input" and CHARGES == []
    pending = harness.app.approvals.pending("t", viewer="user-7")
    assert [(p.tool_call_id, p.tool_name, p.input) for p in pending] == [
        ("c1", "charge_card", {"amount": 9000})
    ]
    # A stray delivery of the tool step before the decision never runs the tool.
    assert harness.app.execute_step(waiting.run_id, "tool:charge_card:c1").status == "waiting"
    assert CHARGES == []
    assert harness.app.approvals.resolve("t", "c1", approve=True, viewer="user-7") == "applied"
    result = harness.result(waiting.run_id)
    assert (result.status, result.stopped, result.text) == ("completed", "final", "Charged.")
    assert CHARGES == [9000]
    assert [m.role for m in harness.messages("t")] == ["user", "assistant", "tool", "assistant"]
    assert harness.app.approvals.pending("t", viewer="user-7") == []


def test_reject_tells_the_model_and_never_runs_the_tool() -> None:
    harness = billing([tool_call_turn("c1", "charge_card", {"amount": 9000}), final_turn("Not charged.")])
    waiting = harness.run(input="charge 9000", thread_key="t")
    assert harness.resolve("t", "c1", approve=False, reason="too much") == "applied"
    result = harness.result(waiting.run_id)
    assert (result.status, result.text) == ("completed", "Not charged.")
    assert CHARGES == []
    rejection = harness.messages("t")[2]
    assert rejection.role == "tool" and "rejected by a human reviewer: too much" in (rejection.content or "")
    assert harness.model.calls[1][-1]["content"] == rejection.content
    # Stray or late deliveries of the rejected tool step replay the rejection.
    assert harness.app.execute_step(waiting.run_id, "tool:charge_card:c1").status == "replayed"
    assert CHARGES == []


def test_decisions_are_final_and_idempotent() -> None:
    harness = billing(
        [
            tool_calls_turn([("a", "charge_card", {"amount": 6000}), ("b", "charge_card", {"amount": 7000})]),
            final_turn("done"),
        ]
    )
    waiting = harness.run(input="two charges", thread_key="t")
    assert harness.resolve("t", "a", approve=True) == "applied"
    assert harness.result(waiting.run_id).status == "awaiting_input"  # b still waits
    assert CHARGES == [6000]
    assert [p.tool_call_id for p in harness.app.approvals.pending("t", trusted=True)] == ["b"]
    assert harness.resolve("t", "a", approve=True) == "unchanged"
    with pytest.raises(ConflictError, match="already approved"):
        harness.resolve("t", "a", approve=False)
    assert harness.resolve("t", "b", approve=False) == "applied"
    assert harness.result(waiting.run_id).stopped == "final"
    assert CHARGES == [6000]
    assert [m.tool_call_id for m in harness.messages("t") if m.role == "tool"] == ["a", "b"]


def test_strangers_and_unknown_calls_get_not_found() -> None:
    harness = billing([tool_call_turn("c1", "charge_card", {"amount": 9000}), final_turn("x")])
    harness.run(input="charge", thread_key="t", owner="user-7")
    with pytest.raises(NotFoundError):
        harness.app.approvals.resolve("t", "c1", approve=True, viewer="mallory")
    with pytest.raises(NotFoundError):
        harness.app.approvals.resolve("t", "nope", approve=True, viewer="user-7")
    assert CHARGES == []
