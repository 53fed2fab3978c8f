"""A database outage while a step records its result: the write is retried (bounded), the work is
not run again — a paid model call or a tool's effect is recorded once, not repeated."""

from __future__ import annotations

from typing import Any

import pytest

from lunora_jobs import define_tool, final_turn, tool_call_turn
from lunora_jobs.agent import define_agent
from lunora_jobs.config import Settings
from lunora_jobs.store import InMemoryStore
from lunora_jobs.testing import agent_harness


class Outage(Exception):
    """What the store raises while its database is away."""


class FlakyStore(InMemoryStore):
    """The in-memory store whose next ``failures`` completions fail as in a database restart."""

    transient_errors = (Outage,)

    def __init__(self) -> None:
        super().__init__()
        self.failures = 0
        self.attempts = 0

    def complete_step(self, *args: Any, **kwargs: Any) -> bool:
        self.attempts += 1
        if self.failures > 0:
            self.failures -= 1
            raise Outage("connection refused")
        return super().complete_step(*args, **kwargs)


def _harness(store: FlakyStore, calls: list[str], retry_s: float) -> Any:
    def charge(args: dict[str, Any], ctx: Any) -> str:
        calls.append(ctx.idempotency_key)
        store.failures = 3  # the database goes away right after the effect
        return "charged"

    tool = define_tool(name="charge", description="Charge.", input_schema={"type": "object"}, execute=charge)
    agent = define_agent(name="pays", instructions="i", tools=[tool])
    script = [tool_call_turn("c1", "charge", {}), final_turn("done")]
    harness = agent_harness(agent, script=script, store=store)
    harness.app.deps.settings = Settings(complete_retry_s=retry_s)
    return harness


def test_the_result_write_is_retried_across_an_outage_and_the_work_runs_once() -> None:
    store, calls = FlakyStore(), []
    harness = _harness(store, calls, retry_s=10)
    result = harness.run(input="go", thread_key="t")
    assert result.status == "completed"
    assert calls == ["tool:charge:c1"]  # not run again
    step = store.get_step(result.run_id, "tool:charge:c1")
    assert step is not None and step.attempt == 1 and step.status == "completed"


def test_an_outage_longer_than_the_bound_gives_the_attempt_up() -> None:
    store, calls = FlakyStore(), []
    harness = _harness(store, calls, retry_s=0.3)  # 0.2 s, then 0.4 s would pass the bound
    with pytest.raises(Outage):
        harness.run(input="go", thread_key="t")
    assert calls == ["tool:charge:c1"]
