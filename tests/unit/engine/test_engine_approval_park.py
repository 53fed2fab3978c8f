"""Parking a run on an approval records the call before the run says it waits.

Found by the chaos run (``tests/chaos/test_chaos_scale.py``): an approver that saw the run
``awaiting_input`` and decided at once was refused with "no pending approval", because the run's
status was written before the call it waits on.
"""

from __future__ import annotations

from typing import Any

from lunora_jobs.agent import define_agent
from lunora_jobs.models.scripted import final_turn, tool_call_turn
from lunora_jobs.store.memory import InMemoryStore
from lunora_jobs.testing import agent_harness
from lunora_jobs.tools import define_tool


class _WatchingStore(InMemoryStore):
    """Records, at the moment a run turns ``awaiting_input``, the calls a decider could find."""

    def __init__(self) -> None:
        super().__init__()
        self.seen_at_park: list[Any] = []

    def transition_run(self, run_id: str, from_statuses: Any, **changes: Any) -> bool:
        if changes.get("status") == "awaiting_input":
            self.seen_at_park.append(self.get_tool_call(run_id, "p"))
        return super().transition_run(run_id, from_statuses, **changes)

    def transition_run_and_thread(self, run_id: str, from_statuses: Any, **changes: Any) -> bool:
        # How park moves the run (with its thread, in one statement).
        if changes.get("status") == "awaiting_input":
            self.seen_at_park.append(self.get_tool_call(run_id, "p"))
        return super().transition_run_and_thread(run_id, from_statuses, **changes)


def test_the_call_a_run_waits_on_is_recorded_before_the_run_turns_awaiting_input() -> None:
    pay = define_tool(name="pay", description="Pay.", input_schema={"type": "object"},
                      execute=lambda args, ctx: "paid", needs_approval=True)
    agent = define_agent(name="payer", instructions="i", tools=[pay])
    store = _WatchingStore()
    harness = agent_harness(agent, [tool_call_turn("p", "pay", {}), final_turn("done")], store=store)

    waiting = harness.run(input="go", thread_key="t")

    assert waiting.status == "awaiting_input"
    assert len(store.seen_at_park) == 1
    recorded = store.seen_at_park[0]
    assert recorded is not None and recorded.status == "awaiting_approval"
    assert harness.resolve("t", "p", approve=True) == "applied"
    assert harness.result(waiting.run_id).status == "completed"
