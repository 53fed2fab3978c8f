"""agent_as_tool: a supervisor delegates to a specialist as a child run; the supervisor hibernates
on child:<call_id> until the child ends, then answers the call with the child's final answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from lunora_jobs import (
    ModelTurn,
    ScriptedModel,
    Usage,
    agent_as_tool,
    code_tool,
    define_agent,
    final_turn,
    tool,
    tool_call_turn,
)
from lunora_jobs.engine.children import child_run_id
from lunora_jobs.engine.dispatch import InProcessDispatcher, StepTask
from lunora_jobs.errors import InvalidAgentOptionError, InvalidToolError
from lunora_jobs.store.records import RunRecord
from lunora_jobs.testing import Harness, agent_harness


@tool(needs_approval=True)
def publish(text: str) -> str:
    """Publish a finding (a human approves it first)."""
    return f"published: {text}"


def specialist(*, gated: bool = False) -> Any:
    return define_agent(name="researcher", model="offline", instructions="Research the question.",
                        tools=[publish] if gated else [])


def supervisor(child: Any) -> Any:
    return define_agent(name="lead", model="offline", instructions="Delegate research.",
                        tools=[agent_as_tool(child, description="Delegate deep research.", name="research")])


class PerAgent:
    """One scripted model per agent (told apart by their instructions in the system message): a
    ScriptedModel plays its turn *n* to any prompt holding *n* assistant turns, child or parent."""

    name = "per-agent"

    def __init__(self, lead: Sequence[ModelTurn], researcher: Sequence[ModelTurn]) -> None:
        self.lead, self.researcher = ScriptedModel(lead), ScriptedModel(researcher)

    def generate(self, messages: Sequence[dict[str, Any]], **options: Any) -> ModelTurn:
        model = self.researcher if "Research the question." in str(messages[0]["content"]) else self.lead
        return model.generate(messages, **options)


def harness_for(child: Any, lead: Sequence[ModelTurn], researcher: Sequence[ModelTurn],
                **options: Any) -> Harness:
    return agent_harness(supervisor(child), model=PerAgent(lead, researcher), **options)


def runs_of(harness: Harness, agent: str) -> list[RunRecord]:
    return [r for r in harness.store.list_runs() if r.agent == agent]


def test_the_child_answer_is_the_tool_result_and_usage_rolls_up() -> None:
    harness = harness_for(specialist(), [
        tool_call_turn("c1", "research", {"input": "Why is the sky blue?"}, usage=Usage(10, 5)),
        final_turn("The sky is blue because of Rayleigh scattering.", usage=Usage(20, 4)),
    ], [final_turn("Rayleigh scattering.", usage=Usage(7, 3))])
    result = harness.run(input="sky?", thread_key="t", owner="u1")
    assert (result.status, result.text) == ("completed", "The sky is blue because of Rayleigh scattering.")
    [child] = runs_of(harness, "researcher")
    assert child.id == child_run_id(result.run_id, "research", "c1")
    assert (child.status, child.owner, child.input["input"]) == ("completed", "u1", "Why is the sky blue?")
    assert child.input["parent"] == {"run_id": result.run_id, "step": "child:c1"}
    tool_message = harness.messages("t")[2]
    assert tool_message.role == "tool" and tool_message.content == "Rayleigh scattering."
    assert tool_message.metadata is not None and tool_message.metadata["child_run_id"] == child.id
    # The child's transcript lives on its own thread, owned like the parent's.
    child_thread = harness.store.get_thread_by_id(child.thread_id)
    assert child_thread is not None
    assert (child_thread.key, child_thread.owner) == (f"t/child-{child.id}", "u1")
    # The supervisor's prompt on its next turn carried the child's answer.
    assert harness.model.calls[2][-1]["content"] == "Rayleigh scattering."  # lead, child, lead
    # Run totals: the child's 7 + 3 tokens are added to the parent's own 30 + 9.
    parent = harness.store.get_run(result.run_id)
    assert parent is not None and (parent.input_tokens, parent.output_tokens) == (37, 12)
    assert result.usage.input_tokens == 37 and result.usage.output_tokens == 12
    steps = sorted(s.name for s in harness.steps(result.run_id))
    assert steps == ["child:c1", "llm:turn:0", "llm:turn:1", "tool:research:c1"]


def test_the_parent_hibernates_while_the_child_waits_and_wakes_when_it_ends() -> None:
    harness = harness_for(specialist(gated=True), [
        tool_call_turn("c1", "research", {"input": "find and publish"}), final_turn("Done: published."),
    ], [
        tool_call_turn("p1", "publish", {"text": "finding"}),   # the child parks on its approval
        final_turn("Published the finding."),
    ])
    parked = harness.run(input="go", thread_key="t")
    [child] = runs_of(harness, "researcher")
    assert parked.status == "awaiting_input" and child.status == "awaiting_input"
    # No task of either run is queued or leased: both are only rows.
    assert all(s.status == "completed" for s in harness.steps(parked.run_id))
    # A stray delivery of the wait or the delegated tool step before the child ends changes nothing.
    assert harness.app.execute_step(parked.run_id, "child:c1").status == "waiting"
    assert harness.app.execute_step(parked.run_id, "tool:research:c1").status == "waiting"
    # A replay of the delegating turn and the sweep never start a second child.
    assert harness.app.execute_step(parked.run_id, "llm:turn:0").status == "replayed"
    harness.app.sweep(grace_ms=0)
    assert [r.id for r in runs_of(harness, "researcher")] == [child.id]
    assert harness.store.get_run(parked.run_id).status == "awaiting_input"  # type: ignore[union-attr]
    child_key = harness.store.get_thread_by_id(child.thread_id).key  # type: ignore[union-attr]
    assert harness.resolve(child_key, "p1", approve=True) == "applied"
    done = harness.result(parked.run_id)
    assert (done.status, done.text) == ("completed", "Done: published.")
    assert harness.messages("t")[2].content == "Published the finding."
    assert len(runs_of(harness, "researcher")) == 1


def test_cancelling_the_parent_cancels_the_child() -> None:
    harness = harness_for(specialist(gated=True), [tool_call_turn("c1", "research", {"input": "x"})],
                          [tool_call_turn("p1", "publish", {"text": "y"})])
    parked = harness.run(input="go", thread_key="t")
    [child] = runs_of(harness, "researcher")
    assert harness.app.agents.lead.cancel(parked.run_id) is True
    assert harness.store.get_run(child.id).status == "cancelled"  # type: ignore[union-attr]
    assert harness.store.get_run(parked.run_id).status == "cancelled"  # type: ignore[union-attr]
    # The child's end woke the cancelled parent's wait: it is skipped, nothing runs.
    assert "child:c1" not in [s.name for s in harness.steps(parked.run_id)]


def test_a_cancelled_child_answers_the_call_with_an_error() -> None:
    harness = harness_for(specialist(gated=True), [
        tool_call_turn("c1", "research", {"input": "x"}), final_turn("The research was cancelled; sorry."),
    ], [tool_call_turn("p1", "publish", {"text": "y"})])
    parked = harness.run(input="go", thread_key="t")
    [child] = runs_of(harness, "researcher")
    assert harness.app.agents.researcher.cancel(child.id) is True
    done = harness.result(parked.run_id)
    assert (done.status, done.text) == ("completed", "The research was cancelled; sorry.")
    message = harness.messages("t")[2]
    assert message.metadata is not None and message.metadata["is_error"] is True
    assert "delegated run of agent 'researcher' was cancelled" in (message.content or "")


def test_a_child_refused_at_start_answers_the_call_with_the_refusal() -> None:
    harness = harness_for(specialist(), [
        tool_call_turn("c1", "research", {"input": "x"}), final_turn("Could not delegate."),
    ], [final_turn("never")])
    child_id = child_run_id("parent-1", "research", "c1")
    # The child's thread is taken by another owner: its start is refused for good (a ConflictError).
    harness.store.ensure_thread(f"t/child-{child_id}", owner="mallory")
    harness.app.agents.lead.run(input="go", thread_key="t", owner="u1", run_id="parent-1")
    done = harness.result("parent-1")
    assert (done.status, done.text) == ("completed", "Could not delegate.")
    assert runs_of(harness, "researcher") == []
    message = harness.messages("t")[2]
    assert message.metadata is not None and message.metadata["is_error"] is True
    assert "delegated run of agent 'researcher' failed: ConflictError" in (message.content or "")


class DropChildWakes(InProcessDispatcher):
    """Loses every wake a child sends its parent (a crash between the child's end and the enqueue)."""

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        super().dispatch([t for t in tasks if not (t.step.startswith("child:") and self.dropping)])

    dropping = True


def test_the_sweep_repairs_a_lost_wake() -> None:
    dispatcher = DropChildWakes()
    lead = [tool_call_turn("c1", "research", {"input": "x"}), final_turn("done")]
    harness = harness_for(specialist(), lead, [final_turn("child answer")], dispatcher=dispatcher)
    parked = harness.run(input="go", thread_key="t")
    [child] = runs_of(harness, "researcher")
    assert child.status == "completed" and parked.status == "awaiting_input"
    dispatcher.dropping = False
    harness.app.sweep(grace_ms=0)
    done = harness.result(parked.run_id)
    assert (done.status, done.text) == ("completed", "done")
    assert harness.messages("t")[2].content == "child answer"


def test_a_gated_agent_tool_waits_for_its_approval_before_the_child_starts() -> None:
    child = specialist()
    lead = define_agent(name="lead", model="offline", instructions="Delegate research.", tools=[
        agent_as_tool(child, description="Delegate.", name="research", needs_approval=True)])
    harness = agent_harness(lead, model=PerAgent(
        [tool_call_turn("c1", "research", {"input": "x"}), final_turn("done")], [final_turn("child answer")]))
    parked = harness.run(input="go", thread_key="t")
    assert parked.status == "awaiting_input" and runs_of(harness, "researcher") == []  # not before approval
    assert harness.resolve("t", "c1", approve=True) == "applied"
    assert (harness.result(parked.run_id).text, harness.messages("t")[2].content) == ("done", "child answer")
    rejected = agent_harness(lead, model=PerAgent(
        [tool_call_turn("c1", "research", {"input": "x"}), final_turn("not delegated")], []))
    waiting = rejected.run(input="go", thread_key="t")
    assert rejected.resolve("t", "c1", approve=False) == "applied"
    assert rejected.result(waiting.run_id).text == "not delegated"
    assert runs_of(rejected, "researcher") == []  # a rejected delegation never starts a child


def test_agent_tools_refuse_what_they_cannot_do() -> None:
    child = specialist()
    with pytest.raises(InvalidToolError, match="not an agent"):
        agent_as_tool("researcher", description="x")  # type: ignore[arg-type]
    with pytest.raises(InvalidToolError, match="cannot be composed"):
        code_tool([agent_as_tool(child, description="x")])
    with pytest.raises(InvalidAgentOptionError, match="cannot start a child run"):
        define_agent(name="lead", model="offline", action_approval_mode="independent",
                     tools=[agent_as_tool(child, description="x", needs_approval=True)])
