"""Retries: the agent's ``retry=`` policy (recorded per run), ``app.runs.retry`` of a failed run, and
``run_timeout_s`` — through the real engine over an ``InMemoryStore`` on a ``FakeClock``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from harness_support import FakeClock, WorkerDied

from lunora_jobs import (
    ConflictError,
    ModelTurn,
    NotFoundError,
    RetryPolicy,
    RunNotFailedError,
    define_agent,
    final_turn,
    tool,
    tool_call_turn,
)
from lunora_jobs.engine.dispatch import InProcessDispatcher, StepTask
from lunora_jobs.errors import InvalidAgentOptionError, InvalidRetryPolicyError
from lunora_jobs.models.base import ToolChoice, ToolSpec
from lunora_jobs.store.memory import InMemoryStore
from lunora_jobs.testing import Harness, agent_harness


class HttpError(Exception):
    """Shaped like an SDK's status error (``status_code``)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status


class Slow:
    """A plan entry: the model call takes ``ms`` (on the fake clock), then answers ``turn``."""

    def __init__(self, turn: ModelTurn, ms: int) -> None:
        self.turn, self.ms = turn, ms


Plan = Sequence["ModelTurn | BaseException | Slow"]


class Model:
    """Answers each call from ``plan`` in order: a ``ModelTurn``, an exception to raise, or a
    ``Slow`` turn. Records the clock at each call."""

    name = "planned"

    def __init__(self, plan: Plan, clock: FakeClock) -> None:
        self.plan = list(plan)
        self.clock = clock
        self.calls: list[int] = []

    def generate(
        self, messages: Sequence[dict[str, Any]], *, tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto", output_schema: dict[str, Any] | None = None,
    ) -> ModelTurn:
        self.calls.append(self.clock.now)
        step = self.plan.pop(0)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, Slow):
            self.clock.advance(step.ms)
            return step.turn
        return step


RECORDS: list[str] = []


@tool
def record(value: str) -> str:
    """Record a value."""
    RECORDS.append(value)
    return f"recorded {value}"


@tool(needs_approval=True)
def gated(value: str) -> str:
    """Record a value once a human approved it."""
    RECORDS.append(value)
    return f"approved {value}"


def harness(plan: Plan, *, store: InMemoryStore | None = None,
            dispatcher: InProcessDispatcher | None = None, **options: Any) -> tuple[Harness, Model]:
    RECORDS.clear()
    store = store or InMemoryStore(clock=FakeClock())
    assert isinstance(store.clock, FakeClock)
    model = Model(plan, store.clock)
    agent = define_agent(name="worker", model="offline", tools=[record, gated], **options)
    return agent_harness(agent, model=model, store=store, dispatcher=dispatcher), model


# -- (a) the retry= policy --------------------------------------------------------------------


def test_the_policy_sets_the_attempts_and_the_jitter_bounds_between_them() -> None:
    h, model = harness([TimeoutError("slow")] * 3 + [final_turn("done")],
                       retry=RetryPolicy(max_attempts=4, base_s=100, cap_s=150))
    result = h.run(input="go", thread_key="t")
    assert (result.status, result.text) == ("completed", "done")
    gaps = [b - a for a, b in zip(model.calls, model.calls[1:], strict=False)]
    # Full jitter under the policy's base and cap: up to 100 s, 150 s (200 capped), 150 s (400 capped).
    assert len(gaps) == 3 and gaps[0] <= 100_001 and gaps[1] <= 150_001 and gaps[2] <= 150_001, gaps
    # The default policy (1 s base) waits 7 s at most in all; three uniform draws this wide sum to
    # less than that with a probability of about 2e-5.
    assert sum(gaps) > 7_003, gaps
    step = h.steps(result.run_id)[0]
    assert (step.name, step.attempt) == ("llm:turn:0", 4)
    h2, model2 = harness([TimeoutError("slow")] * 9, retry={"max_attempts": 3, "base_s": 0, "cap_s": 0})
    failed = h2.run(input="go", thread_key="t")
    assert failed.status == "failed" and "after 3 attempt(s)" in (failed.error or "")
    assert len(model2.calls) == 3


def test_give_up_on_and_retry_statuses_choose_which_errors_are_retried() -> None:
    h, model = harness([ValueError("bad prompt"), final_turn("never")], retry={"give_up_on": [ValueError]})
    result = h.run(input="go", thread_key="t")
    assert result.status == "failed" and "ValueError: bad prompt" in (result.error or "")
    assert len(model.calls) == 1  # given up at once, no second attempt
    h, model = harness([HttpError(418), final_turn("never")])
    assert h.run(input="go", thread_key="t").status == "failed" and len(model.calls) == 1  # 4xx: terminal
    h, model = harness([HttpError(418), HttpError(503), final_turn("teapot ok")],
                       retry={"retry_statuses": [418, 429], "base_s": 0, "cap_s": 0})
    result = h.run(input="go", thread_key="t")
    assert (result.status, result.text, len(model.calls)) == ("completed", "teapot ok", 3)


def test_bad_policies_are_refused_at_declaration_with_a_named_error() -> None:
    for bad in ({"max_attempts": 0}, {"base_s": -1}, {"base_s": 5, "cap_s": 1},
                {"retry_statuses": [503]}, {"give_up_on": ["ValueError"]}, {"give_up_on": [42]},
                {"backoff": 2}, "fast"):
        with pytest.raises(InvalidRetryPolicyError):
            define_agent(name="x", model="offline", retry=bad)
    with pytest.raises(InvalidRetryPolicyError, match="give it once"):
        define_agent(name="x", model="offline", retry={"max_attempts": 3}, max_attempts=4)
    agent = define_agent(name="x", model="offline", max_attempts=3)
    assert agent.retry == RetryPolicy(max_attempts=3) and agent.max_attempts == 3
    for bad_timeout in (0, -1, "60", True):
        with pytest.raises(InvalidAgentOptionError, match="run_timeout_s"):
            define_agent(name="x", model="offline", run_timeout_s=bad_timeout)


def test_a_run_keeps_the_policy_it_started_with_across_a_redeploy() -> None:
    h, _ = harness([tool_call_turn("g1", "gated", {"value": "x"})], retry={"max_attempts": 2})
    parked = h.run(input="go", thread_key="t")
    assert parked.status == "awaiting_input"
    # The deploy raises the attempts; this run started under max_attempts=2 and keeps it.
    redeployed, model = harness([TimeoutError("down")] * 11, store=h.store,
                                retry={"max_attempts": 9, "base_s": 0, "cap_s": 0})
    redeployed.resolve("t", "g1", approve=True)
    result = redeployed.result(parked.run_id)
    assert result.status == "failed" and "after 2 attempt(s)" in (result.error or "")
    assert len(model.calls) == 2
    fresh = redeployed.run(input="again", thread_key="t2")
    assert fresh.status == "failed" and len(model.calls) == 2 + 9  # a new run: the new policy


# -- (b) app.runs.retry ---------------------------------------------------------------------


def test_retry_resumes_a_failed_run_from_its_failed_step_without_re_running_completed_ones() -> None:
    h, model = harness([tool_call_turn("c1", "record", {"value": "a"}), TimeoutError("down"),
                        TimeoutError("down"), final_turn("done")], retry={"max_attempts": 2})
    failed = h.run(input="go", thread_key="t", owner="u1")
    assert failed.status == "failed" and RECORDS == ["a"] and len(model.calls) == 3
    assert h.thread("t").status == "failed" and h.thread("t").active_run_id is None
    assert h.app.runs.retry(failed.run_id, viewer="u1") == ["llm:turn:1"]
    result = h.result(failed.run_id)
    assert (result.status, result.text, result.error) == ("completed", "done", None)
    assert RECORDS == ["a"] and len(model.calls) == 4  # turn 0 and the tool stayed memoized
    steps = {s.name: (s.status, s.attempt) for s in h.steps(failed.run_id)}
    assert steps == {"llm:turn:0": ("completed", 1), "tool:record:c1": ("completed", 1),
                     "llm:turn:1": ("completed", 1)}  # fresh attempts for the failed turn
    assert [m.role for m in h.messages("t")] == ["user", "assistant", "tool", "assistant"]
    assert h.thread("t").status == "completed"


def test_retry_refuses_unknown_unfailed_strangers_and_busy_threads() -> None:
    h, _ = harness([final_turn("ok"), TimeoutError("x"), final_turn("other")], retry={"max_attempts": 1})
    done = h.run(input="go", thread_key="t", owner="u1")
    with pytest.raises(RunNotFailedError, match="completed, not failed"):
        h.app.runs.retry(done.run_id, viewer="u1")
    with pytest.raises(NotFoundError):
        h.app.runs.retry("no-such-run", trusted=True)
    failed = h.run(input="again", thread_key="t", owner="u1")
    assert failed.status == "failed"
    with pytest.raises(NotFoundError):  # another owner's run looks like no run at all
        h.app.runs.retry(failed.run_id, viewer="u2")
    assert h.run(input="third", thread_key="t", owner="u1").status == "completed"
    h2, _ = harness([tool_call_turn("g1", "gated", {"value": "x"}), TimeoutError("x")], store=h.store)
    h2.app.agents.worker.run(input="parked", thread_key="t", owner="u1")  # the thread is busy now
    with pytest.raises(ConflictError, match="another run in flight"):
        h.app.runs.retry(failed.run_id, viewer="u1")
    parked = h.store.get_thread("t")
    assert parked is not None and parked.active_run_id is not None
    with pytest.raises(RunNotFailedError, match="awaiting_input"):
        h.app.runs.retry(parked.active_run_id, viewer="u1")


# -- (c) run_timeout_s ------------------------------------------------------------------------


def test_a_run_past_its_timeout_fails_at_the_next_step_boundary() -> None:
    clock = FakeClock()
    store = InMemoryStore(clock=clock)
    h, model = harness([Slow(tool_call_turn("c1", "record", {"value": "a"}), 61_000),  # a 61 s turn
                        final_turn("late")], store=store, run_timeout_s=60)
    result = h.run(input="go", thread_key="t")
    assert result.status == "failed" and (result.error or "").startswith("RunTimeoutError:")
    assert "tool:record:c1" in (result.error or "") and RECORDS == []  # the tool never ran
    assert len(model.calls) == 1 and h.thread("t").active_run_id is None
    assert all(s.status != "running" for s in h.steps(result.run_id))  # nothing left leased
    # A retry gives it a fresh time budget: the tool runs, the run completes.
    # (The deadline was checked before the tool step was claimed: no ledger row needs a fresh start.)
    assert h.app.runs.retry(result.run_id, trusted=True) == []
    again = h.result(result.run_id)
    assert (again.status, again.text, RECORDS) == ("completed", "late", ["a"])


class _Dropper(InProcessDispatcher):
    """Drops every dispatch of the named steps, as a broker that lost them would."""

    def __init__(self, drop: set[str], sleep: Callable[[float], None]) -> None:
        super().__init__(sleep=sleep)
        self.drop = drop

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        super().dispatch([t for t in tasks if t.step not in self.drop])


def test_the_sweep_fails_a_stuck_run_past_its_timeout() -> None:
    clock = FakeClock()
    store = InMemoryStore(clock=clock)
    h, model = harness([tool_call_turn("c1", "record", {"value": "a"}), final_turn("never")], store=store,
                       dispatcher=_Dropper({"tool:record:c1"}, sleep=lambda s: None), run_timeout_s=60)
    stuck = h.run(input="go", thread_key="t")
    assert stuck.status == "running"  # the tool's message was lost
    clock.advance(31_000)
    h.app.sweep()  # within the budget: the sweep re-dispatches (dropped again), the run stays
    assert h.result(stuck.run_id).status == "running"
    clock.advance(31_000)
    report = h.app.sweep()
    assert report.failed == [stuck.run_id]
    result = h.result(stuck.run_id)
    assert result.status == "failed" and "found by the sweep" in (result.error or "")
    assert RECORDS == [] and len(model.calls) == 1


def test_a_parked_run_is_not_read_by_the_sweep_and_times_out_when_its_decision_arrives() -> None:
    clock = FakeClock()
    h, _ = harness([tool_call_turn("g1", "gated", {"value": "x"}), final_turn("done")],
                   store=InMemoryStore(clock=clock), run_timeout_s=60)
    parked = h.run(input="go", thread_key="t")
    assert parked.status == "awaiting_input"
    clock.advance(3_600_000)
    assert h.app.sweep().failed == []  # hibernated: the sweep never reads it
    assert h.result(parked.run_id).status == "awaiting_input"
    h.resolve("t", "g1", approve=True)
    result = h.result(parked.run_id)
    assert result.status == "failed" and "RunTimeoutError" in (result.error or "") and RECORDS == []


# -- the poison-step rule under a recorded policy ---------------------------------------------------

LEASE_MS = 330_000  # past any lease


def _poison_run(recorded: int, deployed: int) -> tuple[Harness, str, dict[str, int]]:
    """A tool that kills its worker every time (until ``crash["on"]`` is 0), started under
    ``max_attempts=recorded`` and swept by a deploy with ``max_attempts=deployed``."""
    crash = {"on": 1, "runs": 0}

    @tool
    def poison(q: str) -> str:
        """Kills its worker while crash["on"] is set."""
        crash["runs"] += 1
        if crash["on"]:
            raise WorkerDied()
        return "survived"

    clock = FakeClock()
    store = InMemoryStore(clock=clock)
    script = [tool_call_turn("p1", "poison", {"q": "x"}), final_turn("done")]
    def deployed_with(attempts: int) -> Harness:
        agent = define_agent(name="support", model="offline", tools=[poison], max_attempts=attempts)
        return agent_harness(agent, script=script, store=store)

    first = deployed_with(recorded)
    with pytest.raises(WorkerDied):
        first.run(input="go", thread_key="t")
    deploy = deployed_with(deployed)
    run_id = store.list_runs()[0].id
    for _ in range(6):
        clock.advance(LEASE_MS + 1)
        try:
            deploy.app.sweep()
        except WorkerDied:
            continue
    return deploy, run_id, crash


@pytest.mark.parametrize(("recorded", "deployed"), [(2, 4), (4, 2)])
def test_a_step_that_kills_its_worker_is_held_to_the_runs_recorded_max_attempts(
    recorded: int, deployed: int
) -> None:
    deploy, run_id, crash = _poison_run(recorded, deployed)
    assert crash["runs"] == recorded  # not the deployed agent's number
    result = deploy.result(run_id)
    assert result.status == "failed" and "StepExhaustedError" in (result.error or "")
    assert f"max_attempts={recorded}" in (result.error or "")
    # Fixed: a retry gives the exhausted step fresh attempts, and the run finishes.
    crash["on"] = 0
    assert deploy.app.runs.retry(run_id, trusted=True) == ["tool:poison:p1"]
    assert deploy.result(run_id).status == "completed" and crash["runs"] == recorded + 1
