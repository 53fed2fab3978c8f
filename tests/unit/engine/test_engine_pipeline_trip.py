"""A step goes through the pipeline's stages once each, in order: claim → work → complete → plan → dispatch.

Traced with ``sys.setprofile`` around every ``Engine.execute`` of a real run (turns, parallel tool
calls, an approval): a stage module is entered only from the runner, at most once per step, and
never after a later stage started.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from lunora_jobs import define_tool, final_turn, tool_call_turn, tool_calls_turn
from lunora_jobs.agent import define_agent
from lunora_jobs.engine.hooks import StepHooks, StepInfo
from lunora_jobs.engine.pipeline import Engine
from lunora_jobs.store.records import RunRecord
from lunora_jobs.testing import agent_harness

STAGES = {
    "lunora_jobs.engine.pipeline.claim": "claim",
    "lunora_jobs.engine.pipeline.work": "work",
    "lunora_jobs.engine.pipeline.complete": "complete",
    "lunora_jobs.engine.pipeline.planning": "plan",
    "lunora_jobs.engine.pipeline.dispatch": "dispatch",
}
ORDER = ["claim", "work", "complete", "plan", "dispatch"]
RUNNER = "lunora_jobs.engine.pipeline.runner"


def _agent() -> Any:
    echo = define_tool(name="echo", description="Echo.", input_schema={"type": "object"},
                       execute=lambda args, ctx: args)
    gated = define_tool(name="pay", description="Pay.", input_schema={"type": "object"},
                        execute=lambda args, ctx: "paid", needs_approval=True)
    return define_agent(name="trip", instructions="i", tools=[echo, gated], max_turns=6)


def _trace(execute: Callable[..., Any]) -> tuple[list[list[tuple[str, str]]], Callable[..., Any]]:
    trips: list[list[tuple[str, str]]] = []

    def traced(self: Engine, run_id: str, step: str, **kwargs: Any) -> Any:
        entries: list[tuple[str, str]] = []

        def profile(frame: FrameType, event: str, arg: Any) -> None:
            if event != "call":
                return
            module = frame.f_globals.get("__name__", "")
            caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
            if module in STAGES and caller != module and not frame.f_code.co_name.startswith("__"):
                entries.append((STAGES[module], caller))

        sys.setprofile(profile)
        try:
            return execute(self, run_id, step, **kwargs)
        finally:
            sys.setprofile(None)
            trips.append(entries)

    return trips, traced


def test_every_step_passes_each_stage_once_in_order(monkeypatch: Any) -> None:
    trips, traced = _trace(Engine.execute)
    monkeypatch.setattr(Engine, "execute", traced)
    harness = agent_harness(_agent(), script=[
        tool_calls_turn([("a", "echo", {"x": 1}), ("b", "echo", {"x": 2})]),
        tool_call_turn("p", "pay", {"amount": 5}),
        final_turn("done"),
    ])
    waiting = harness.run(input="go", thread_key="t")
    assert waiting.status == "awaiting_input"
    assert harness.resolve("t", "p", approve=True) == "applied"
    assert harness.result(waiting.run_id).status == "completed"

    # turn 0, two tools, turn 1 (parks), the approval, the paid tool, turn 2 (final).
    assert len(trips) == 7
    for entries in trips:
        stages = [stage for stage, _ in entries]
        assert all(caller == RUNNER for _, caller in entries), entries  # only the runner enters a stage
        assert len(stages) == len(set(stages)), stages  # each stage at most once
        assert stages == sorted(stages, key=ORDER.index), stages  # never back to a stage it left
        assert stages[:3] == ["claim", "work", "complete"], stages


def test_hooks_see_every_step_and_the_run_end() -> None:
    seen: list[tuple[str, str]] = []

    class Recorder(StepHooks):
        def step_started(self, step: StepInfo) -> None:
            seen.append(("started", step.step))

        def step_finished(self, step: StepInfo, status: str) -> None:
            seen.append((status, step.step))

        def run_finished(self, run: RunRecord, status: str) -> None:
            seen.append(("run", status))

    harness = agent_harness(_agent(), script=[tool_call_turn("a", "echo", {"x": 1}), final_turn("ok")])
    harness.app.hooks.add(Recorder())
    assert harness.run(input="go", thread_key="t").status == "completed"
    assert seen == [
        ("started", "llm:turn:0"), ("completed", "llm:turn:0"),
        ("started", "tool:echo:a"), ("completed", "tool:echo:a"),
        ("started", "llm:turn:1"), ("run", "completed"), ("completed", "llm:turn:1"),  # ends inside its step
    ]


def test_a_failing_hook_never_fails_the_run() -> None:
    class Broken(StepHooks):
        def step_started(self, step: StepInfo) -> None:
            raise RuntimeError("observer bug")

    harness = agent_harness(_agent(), script=[final_turn("ok")])
    harness.app.hooks.add(Broken())
    assert harness.run(input="go", thread_key="t").status == "completed"


def test_a_new_step_kind_is_one_class_and_one_registration() -> None:
    from lunora_jobs.engine import StepKind, StepState, Work, register_step_kind
    from lunora_jobs.engine.context import EngineDeps
    from lunora_jobs.store.records import StepCompletion

    delivered: list[str] = []

    class DeliverStep(StepKind):
        name, prefix, route = "deliver", "test-deliver:", "step"
        after_run_end = True  # a reply goes out once the run has answered

        def work(self, deps: EngineDeps, state: StepState) -> Work:
            assert state.run is not None and state.name.rest is not None
            delivered.append(state.name.rest)
            return Work(StepCompletion(result={"sent": state.name.rest}))

    register_step_kind(DeliverStep())
    harness = agent_harness(_agent(), script=[final_turn("ok")])
    run = harness.run(input="go", thread_key="t")
    outcome = harness.app.engine.execute(run.run_id, "test-deliver:slack")
    assert (outcome.status, outcome.result) == ("completed", {"sent": "slack"})
    assert harness.app.engine.execute(run.run_id, "test-deliver:slack").status == "replayed"  # memoized
    assert delivered == ["slack"]
    assert [s.name for s in harness.steps(run.run_id)][-1] == "test-deliver:slack"


def test_kind_prefixes_may_not_overlap() -> None:
    import pytest

    from lunora_jobs.engine import StepKind, register_step_kind

    class Shadow(StepKind):
        name, prefix = "shadow", "tool:x"

    with pytest.raises(ValueError, match="overlaps"):
        register_step_kind(Shadow())
