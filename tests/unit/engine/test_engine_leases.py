"""Leases kept alive while a step runs (``engine/leases.py``): renewed only past a third of the lease,
never for a step that finishes sooner, dropped once fenced out; an attempt that ended unrecorded is
re-claimable by its own process."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from lunora_jobs import define_tool, final_turn, tool_call_turn
from lunora_jobs.agent import define_agent
from lunora_jobs.config import Settings
from lunora_jobs.engine.leases import LeaseKeeper
from lunora_jobs.testing import agent_harness

LEASE_MS = 90


class _Renewals:
    def __init__(self, answer: bool = True) -> None:
        self.calls: list[tuple[str, str, int, int]] = []
        self.answer = answer
        self.lock = threading.Lock()

    def __call__(self, run_id: str, step: str, generation: int, lease_ms: int) -> bool:
        with self.lock:
            self.calls.append((run_id, step, generation, lease_ms))
        return self.answer

    def count(self) -> int:
        with self.lock:
            return len(self.calls)


def _until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.005)


def test_a_step_shorter_than_a_third_of_its_lease_is_never_renewed() -> None:
    renew = _Renewals()
    keeper = LeaseKeeper(renew)
    for n in range(50):
        keeper.hold("r1", f"tool:x:c{n}", 1, 60_000)
        keeper.release("r1", f"tool:x:c{n}", ended=False)
    assert keeper.holding() == 0
    time.sleep(0.05)
    assert renew.count() == 0


def test_a_long_step_is_renewed_every_third_of_its_lease_until_released() -> None:
    renew = _Renewals()
    keeper = LeaseKeeper(renew)
    started = time.monotonic()
    keeper.hold("r1", "tool:slow:c1", 3, LEASE_MS)
    _until(lambda: renew.count() >= 4)
    elapsed = time.monotonic() - started
    # Four renewals, each due a third of a lease after the last: never later than the lease lapses.
    assert elapsed >= 4 * LEASE_MS / 3 / 1000 * 0.9
    assert set(renew.calls) == {("r1", "tool:slow:c1", 3, LEASE_MS)}
    keeper.release("r1", "tool:slow:c1", ended=False)
    settled = renew.count()
    time.sleep(LEASE_MS / 1000)
    assert renew.count() <= settled + 1  # at most one renewal already under way when released


def test_a_fenced_out_lease_is_dropped_and_an_ended_attempt_is_remembered() -> None:
    renew = _Renewals(answer=False)  # taken over by another worker meanwhile
    keeper = LeaseKeeper(renew)
    keeper.hold("r1", "tool:slow:c1", 1, LEASE_MS)
    _until(lambda: keeper.holding() == 0)
    assert renew.count() == 1

    keeper.hold("r1", "tool:x:c2", 7, 60_000)
    assert keeper.ended_generation("r1", "tool:x:c2") is None  # running here: alive
    keeper.release("r1", "tool:x:c2", ended=True)  # it raised before recording its result
    assert keeper.ended_generation("r1", "tool:x:c2") == 7
    keeper.hold("r1", "tool:x:c2", 8, 60_000)  # re-claimed: the ended attempt is forgotten
    keeper.release("r1", "tool:x:c2", ended=False)
    assert keeper.ended_generation("r1", "tool:x:c2") is None


def test_a_step_outliving_its_lease_keeps_it_and_runs_once() -> None:
    seen: list[Any] = []

    def slow(args: dict[str, Any], ctx: Any) -> str:
        time.sleep(0.6)  # four times the lease: it would have lapsed without the heartbeat
        seen.append(store.get_step(ctx.run_id, "tool:slow:c1"))
        return "done"

    tool = define_tool(name="slow", description="Slow.", input_schema={"type": "object"}, execute=slow)
    agent = define_agent(name="leased", instructions="i", tools=[tool])
    harness = agent_harness(agent, script=[tool_call_turn("c1", "slow", {}), final_turn("ok")])
    harness.app.deps.settings = Settings(lease_s=0.15)
    store = harness.app.store
    result = harness.run(input="go", thread_key="t")
    assert result.status == "completed"
    row = seen[0]
    assert row.generation == 1 and row.attempt == 1
    # Renewed while it ran: the lease ends after the moment it was read, far past the claim's 150 ms.
    assert row.lease_expires_at - row.created_at >= 500
