"""A tool call whose worker died while its run is parked on an approval is taken over by the sweep.

A turn with a gated call and an ungated one parks the run (``awaiting_input``) and runs the ungated
call meanwhile. The sweep took over lapsed leases of running runs only, so when that call's worker
died, the call waited for the human's decision — hours, maybe (found by the chaos run,
``tests/chaos/test_chaos_scale.py``, as 35 s stalls). On the in-memory store and on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lunora_jobs import define_agent, define_tool, final_turn, tool_calls_turn
from lunora_jobs.engine.dispatch import InProcessDispatcher
from lunora_jobs.store import InMemoryStore, create_store
from lunora_jobs.testing import FakeClock, agent_harness

LEASE_MS = 6_000
WORK = "tool:work:w1"


class _LosingFirst(InProcessDispatcher):
    """Loses the first dispatch of ``WORK`` (its worker dies before running it)."""

    lost = False

    def dispatch(self, tasks: Any) -> None:
        kept = [t for t in tasks if not (t.step == WORK and not self.lost)]
        self.lost = self.lost or len(kept) < len(tasks)
        super().dispatch(kept)


@pytest.fixture(params=["memory", "postgres"])
def store_and_clock(request: pytest.FixtureRequest) -> Iterator[tuple[Any, FakeClock]]:
    clock = FakeClock()
    if request.param == "memory":
        yield InMemoryStore(clock=clock), clock
        return
    store = create_store(request.getfixturevalue("pg_url"), clock=clock)
    try:
        yield store, clock
    finally:
        store.close()


def test_a_dead_workers_call_in_a_parked_run_is_taken_over_without_waiting_for_the_decision(
    store_and_clock: tuple[Any, FakeClock],
) -> None:
    store, clock = store_and_clock
    ran: list[str] = []
    work = define_tool(name="work", description="Work.", input_schema={"type": "object"},
                       execute=lambda args, ctx: ran.append(ctx.idempotency_key) or "worked")
    pay = define_tool(name="pay", description="Pay.", input_schema={"type": "object"},
                      execute=lambda args, ctx: "paid", needs_approval=True)
    agent = define_agent(name="parked", instructions="i", tools=[work, pay])
    harness = agent_harness(agent, [tool_calls_turn([("p1", "pay", {}), ("w1", "work", {})]),
                                    final_turn("done")], store=store, dispatcher=_LosingFirst())
    waiting = harness.run(input="go", thread_key="t")
    assert waiting.status == "awaiting_input"
    # The worker that took WORK's message claims it, then dies (no renewal, no result).
    dead = store.claim_step(waiting.run_id, WORK, owner="host:1:dead", lease_ms=LEASE_MS)
    assert dead.outcome == "claimed"

    assert harness.app.sweep(grace_ms=30_000).dispatched == []  # a live lease is respected
    clock.advance(LEASE_MS)
    report = harness.app.sweep(grace_ms=30_000)

    assert [t.step for t in report.dispatched] == [WORK], report
    step = store.get_step(waiting.run_id, WORK)
    assert step is not None and step.status == "completed" and step.attempt == 2
    assert ran == [WORK]
    assert store.get_run(waiting.run_id).status == "awaiting_input"  # still waiting for the human
    assert harness.resolve("t", "p1", approve=True) == "applied"
    assert harness.result(waiting.run_id).status == "completed"
