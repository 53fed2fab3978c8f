"""Replay, crash takeover, poison steps, lost messages and fencing — the durable loop's guarantees."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from harness_support import FakeClock, WorkerDied, weather_agent, weather_stub

from lunora_jobs import ModelTurn, final_turn, tool, tool_call_turn
from lunora_jobs.engine.dispatch import InProcessDispatcher, StepTask
from lunora_jobs.engine.leases import LeaseKeeper
from lunora_jobs.models.base import ToolChoice, ToolSpec
from lunora_jobs.store.memory import InMemoryStore
from lunora_jobs.testing import Harness, agent_harness

LEASE_MS = 330_000  # past any lease: LUNORA_LEASE_S (6 s), at most step_timeout_s 300 + the 30 s margin


def test_re_executing_completed_steps_returns_the_memo_and_calls_nothing() -> None:
    harness = agent_harness(
        weather_agent(),
        script=[
            tool_call_turn("c1", "get_weather", {"city": "Berlin"}),
            final_turn("Sunny."),
        ],
        functions={"weather:lookup": weather_stub},
    )
    result = harness.run(input="Berlin?", thread_key="t")
    transcript = [(m.key, m.content) for m in harness.messages("t")]
    model_calls, tool_calls = len(harness.model.calls), len(harness.dispatches)
    for step in ("llm:turn:0", "tool:get_weather:c1", "llm:turn:1"):
        outcome = harness.app.execute_step(result.run_id, step)
        assert outcome.status == "replayed"
        assert outcome.result == harness.store.get_step(result.run_id, step).result
    assert len(harness.model.calls) == model_calls and len(harness.dispatches) == tool_calls
    assert [(m.key, m.content) for m in harness.messages("t")] == transcript
    assert harness.result(result.run_id) == result


def test_a_replayed_turn_of_a_running_run_recovers_its_lost_fan_out() -> None:
    harness = _lossy_harness(drop={"tool:get_weather:c1"})
    result = harness.run(input="Berlin?", thread_key="t")
    assert result.status == "running"  # the tool's message was lost: the run stalls
    calls = len(harness.model.calls)
    # The broker redelivers the turn (or the sweep does): the memo is replayed, the fan-out re-sent.
    assert harness.app.execute_step(result.run_id, "llm:turn:0").status == "replayed"
    final = harness.result(result.run_id)
    assert (final.status, final.stopped, final.text) == ("completed", "final", "Sunny.")
    assert len(harness.model.calls) == calls + 1  # only turn 1 was new
    assert [m.role for m in harness.messages("t")] == ["user", "assistant", "tool", "assistant"]


def test_the_sweep_redispatches_a_lost_next_turn() -> None:
    clock = FakeClock()
    harness = _lossy_harness(drop={"llm:turn:1"}, clock=clock)
    result = harness.run(input="Berlin?", thread_key="t")
    assert result.status == "running"
    assert harness.app.sweep().dispatched == []  # recent activity: its task may still be queued
    clock.advance(31_000)
    report = harness.app.sweep()
    assert [t.step for t in report.dispatched] == ["llm:turn:1"]
    assert harness.result(result.run_id).stopped == "final"
    assert [m.role for m in harness.messages("t")] == ["user", "assistant", "tool", "assistant"]
    clock.advance(31_000)
    assert harness.app.sweep().scanned == 0  # nothing running any more


def test_a_crashed_step_is_taken_over_once_its_lease_expires() -> None:
    runs = {"n": 0}

    @tool
    def die_once(q: str) -> str:
        """Kills its worker the first time."""
        runs["n"] += 1
        if runs["n"] == 1:
            raise WorkerDied()
        return "survived"

    clock = FakeClock()
    harness = agent_harness(
        weather_agent(tools=[die_once]),
        script=[
            tool_call_turn("d1", "die_once", {"q": "x"}),
            final_turn("done"),
        ],
        store=InMemoryStore(clock=clock),
    )
    with pytest.raises(WorkerDied):
        harness.run(input="go", thread_key="t")
    run = harness.store.list_runs()[0]
    step = "tool:die_once:d1"
    row = harness.store.get_step(run.id, step)
    assert (row.status, row.attempt) == ("running", 1)
    # Another worker (its keeper never held this step): the dead attempt's lease is still live.
    own_keeper = harness.app.deps.leases
    harness.app.deps.leases = LeaseKeeper(harness.store.renew_lease)
    assert harness.app.execute_step(run.id, step).status == "busy"
    clock.advance(LEASE_MS + 1)
    assert harness.app.execute_step(run.id, step).status == "completed"
    row = harness.store.get_step(run.id, step)
    assert (row.status, row.attempt, row.generation) == ("completed", 2, 2)
    assert own_keeper.ended_generation(run.id, step) == 1  # the crashed process knew it had ended


def test_a_redelivery_where_the_attempt_raised_reclaims_at_once() -> None:
    runs = {"n": 0}

    @tool
    def die_once(q: str) -> str:
        """Raises out of the pipeline the first time (a database error mid-write, say)."""
        runs["n"] += 1
        if runs["n"] == 1:
            raise WorkerDied()
        return "survived"

    clock = FakeClock()
    harness = agent_harness(
        weather_agent(tools=[die_once]),
        script=[tool_call_turn("d1", "die_once", {"q": "x"}), final_turn("done")],
        store=InMemoryStore(clock=clock),
    )
    with pytest.raises(WorkerDied):
        harness.run(input="go", thread_key="t")
    run = harness.store.list_runs()[0]
    step = "tool:die_once:d1"
    # Celery retries the task in the same process: no waiting for its own dead attempt's lease.
    assert harness.app.execute_step(run.id, step).status == "completed"
    row = harness.store.get_step(run.id, step)
    assert (row.status, row.attempt, row.generation) == ("completed", 2, 2)
    assert harness.result(run.id).status == "completed"
    assert harness.result(run.id).stopped == "final"
    assert [m.content for m in harness.messages("t") if m.role == "tool"] == ["survived"]


def test_a_poison_step_fails_the_run_after_max_attempts() -> None:
    executions = {"n": 0}

    @tool
    def poison(q: str) -> str:
        """Kills its worker every time."""
        executions["n"] += 1
        raise WorkerDied()

    clock = FakeClock()
    harness = agent_harness(
        weather_agent(tools=[poison], max_attempts=3),
        script=[
            tool_call_turn("p1", "poison", {"q": "x"}),
            final_turn("unreachable"),
        ],
        store=InMemoryStore(clock=clock),
    )
    with pytest.raises(WorkerDied):
        harness.run(input="go", thread_key="t")
    run_id = harness.store.list_runs()[0].id
    for _ in range(2):  # redeliveries after each crash
        clock.advance(LEASE_MS + 1)
        with pytest.raises(WorkerDied):
            harness.app.sweep()
    assert executions["n"] == 3
    clock.advance(LEASE_MS + 1)
    harness.app.sweep()  # the fourth delivery finds the attempts spent: no fourth execution
    assert executions["n"] == 3
    result = harness.result(run_id)
    assert result.status == "failed"
    assert result.error is not None and "StepExhaustedError" in result.error and "poison" in result.error
    assert harness.thread("t").active_run_id is None and harness.thread("t").status == "failed"
    clock.advance(LEASE_MS + 1)
    assert harness.app.sweep().scanned == 0


def test_a_worker_whose_lease_was_taken_over_writes_nothing() -> None:
    clock = FakeClock()
    store = InMemoryStore(clock=clock)
    executions = {"n": 0}

    @tool
    def slow(q: str, ctx: Any) -> str:
        """Slow enough for its lease to expire and another worker to take over."""
        executions["n"] += 1
        if executions["n"] == 1:
            clock.advance(LEASE_MS + 1)
            taken = store.claim_step(ctx.run_id, ctx.idempotency_key, owner="other-worker", lease_ms=LEASE_MS)
            assert taken.outcome == "claimed"
        return f"result {executions['n']}"

    harness = agent_harness(
        weather_agent(tools=[slow]),
        script=[
            tool_call_turn("s1", "slow", {"q": "x"}),
            final_turn("done"),
        ],
        store=store,
    )
    result = harness.run(input="go", thread_key="t")
    assert result.status == "running"
    assert [m.role for m in harness.messages("t")] == ["user", "assistant"]  # fenced out: no tool message
    row = store.get_step(result.run_id, "tool:slow:s1")
    assert (row.status, row.lease_owner, row.generation) == ("running", "other-worker", 2)
    clock.advance(LEASE_MS + 1)  # the other worker died too; the sweep hands the step out again
    harness.app.sweep()
    assert harness.result(result.run_id).stopped == "final"
    assert [m.content for m in harness.messages("t") if m.role == "tool"] == ["result 2"]


def test_a_model_error_is_retried_and_a_persistent_one_fails_the_run() -> None:
    class Flaky:
        name = "flaky"

        def __init__(self, failures: int) -> None:
            self.failures = failures

        def generate(
            self,
            messages: Sequence[dict[str, Any]],
            *,
            tools: Sequence[ToolSpec] = (),
            tool_choice: ToolChoice = "auto",
            output_schema: dict[str, Any] | None = None,
        ) -> ModelTurn:
            if self.failures:
                self.failures -= 1
                raise TimeoutError("provider timed out")
            return final_turn("finally")

    recovered = agent_harness(weather_agent(), model=Flaky(2)).run(input="hi")
    assert (recovered.status, recovered.text) == ("completed", "finally")
    failed_harness = agent_harness(weather_agent(max_attempts=2), model=Flaky(5))
    failed = failed_harness.run(input="hi", thread_key="t")
    assert failed.status == "failed" and "provider timed out" in (failed.error or "")
    assert failed_harness.thread("t").active_run_id is None


class _LossyDispatcher(InProcessDispatcher):
    """Drops the first dispatch of each named step, as a flushed broker would."""

    def __init__(self, drop: set[str]) -> None:
        super().__init__()
        self.drop = set(drop)

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        kept = [t for t in tasks if t.step not in self.drop]
        self.drop -= {t.step for t in tasks}
        super().dispatch(kept)


def _lossy_harness(drop: set[str], clock: FakeClock | None = None) -> Harness:
    return agent_harness(
        weather_agent(),
        script=[
            tool_call_turn("c1", "get_weather", {"city": "Berlin"}),
            final_turn("Sunny."),
        ],
        functions={"weather:lookup": weather_stub},
        store=InMemoryStore(clock=clock),
        dispatcher=_LossyDispatcher(drop),
    )


def test_early_or_bogus_deliveries_are_ignored_without_a_claim() -> None:
    harness = agent_harness(
        weather_agent(),
        script=[tool_call_turn("c1", "get_weather", {"city": "Berlin"}), final_turn("Sunny.")],
        functions={"weather:lookup": weather_stub},
        dispatcher=_LossyDispatcher({"tool:get_weather:c1"}),
    )
    run_id = harness.run(input="Berlin?", thread_key="t").run_id
    assert harness.app.execute_step(run_id, "llm:turn:5").status == "skipped"
    assert harness.app.execute_step(run_id, "tool:get_weather:nope").status == "skipped"
    assert {s.name for s in harness.steps(run_id)} == {"llm:turn:0"}
    assert len(harness.model.calls) == 1
