"""A rolling deploy that changes an agent mid-run: the run finishes on the shape it started with, or
fails with ``AgentChangedError`` — never silently mixed. The app is swapped between two steps: the
first app starts the run and stops before the next step; a second app, with the changed agent, on
the same store, runs it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lunora_jobs import define_agent, tool
from lunora_jobs.config import Settings
from lunora_jobs.engine.dispatch import InProcessDispatcher, StepTask
from lunora_jobs.models.base import Model, ModelTurn, ToolSpec
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn
from lunora_jobs.runtime import Lunora
from lunora_jobs.store.memory import InMemoryStore


class Holding(InProcessDispatcher):
    """Keeps every dispatched task instead of running it (the deploy happens before it runs)."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[StepTask] = []

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        self.held.extend(tasks)


class Seeing(ScriptedModel):
    """A scripted model that records the system prompt and the tool names of every call."""

    def __init__(self, turns: Sequence[ModelTurn]) -> None:
        super().__init__(turns)
        self.seen: list[tuple[str, list[str]]] = []

    def generate(self, messages: Sequence[dict[str, Any]], *, tools: Sequence[ToolSpec] = (),
                 **options: Any) -> ModelTurn:
        self.seen.append((str(messages[0]["content"]), [t.name for t in tools]))
        return super().generate(messages, tools=tools, **options)


@tool
def lookup(order_id: str) -> str:
    """Find an order."""
    return f"order {order_id} shipped"


@tool
def refund(order_id: str) -> str:
    """Refund an order."""
    return "refunded"


def _app(store: InMemoryStore, model: Model, **agent: Any) -> tuple[Lunora, Holding]:
    dispatcher = Holding()
    options: dict[str, Any] = {"name": "support", "instructions": "v1 instructions", "tools": [lookup]}
    options.update(agent)
    app = Lunora([define_agent(model=model, **options)], store=store, dispatcher=dispatcher,
                 settings=Settings(openai_api_key=None, openai_base_url=None))
    return app, dispatcher


def _drain(app: Lunora, dispatcher: Holding, tasks: list[StepTask]) -> None:
    pending = list(tasks)
    while pending:
        task = pending.pop(0)
        app.execute_step(task.run_id, task.step)
        pending += dispatcher.held
        dispatcher.held.clear()


SCRIPT = [tool_call_turn("c1", "lookup", {"order_id": "o-1"}), final_turn("It shipped.")]


def test_new_instructions_and_an_added_tool_do_not_reach_a_run_in_flight() -> None:
    store = InMemoryStore()
    old, held = _app(store, Seeing(SCRIPT))
    handle = old.agents.support.run(input="where is o-1?", thread_key="t1")
    old.execute_step(handle.id, "llm:turn:0")  # v1 ran turn 0; its tool call waits in the broker
    model = Seeing(SCRIPT)
    new, new_held = _app(store, model, instructions="v2 instructions", tools=[lookup, refund])
    _drain(new, new_held, held.held[1:] if held.held[0].step == "llm:turn:0" else held.held)
    run = store.get_run(handle.id)
    assert run is not None and run.status == "completed", run
    # The v2 worker ran turn 1 on the run's recorded shape: v1's instructions, only v1's tools.
    assert model.seen == [("v1 instructions", ["lookup"])]
    # A run started after the deploy gets v2.
    fresh = new.agents.support.run(input="hi", thread_key="t2")
    new.execute_step(fresh.id, "llm:turn:0")
    assert model.seen[-1] == ("v2 instructions", ["lookup", "refund"])


def test_a_pending_call_of_a_changed_tool_fails_the_run_with_a_named_error() -> None:
    store = InMemoryStore()
    old, held = _app(store, ScriptedModel(SCRIPT))
    handle = old.agents.support.run(input="where is o-1?", thread_key="t1")
    old.execute_step(handle.id, "llm:turn:0")
    assert [t.step for t in held.held][-1] == "tool:lookup:c1"

    @tool
    def lookup(order_id: str, region: str) -> str:  # the deploy changed the tool's schema
        """Find an order."""
        return "changed"

    new, _ = _app(store, ScriptedModel(SCRIPT), tools=[lookup])
    new.execute_step(handle.id, "tool:lookup:c1")
    run = store.get_run(handle.id)
    assert run is not None and run.status == "failed"
    assert "AgentChangedError" in str(run.error) and "'lookup'" in str(run.error)
    assert not [m for m in store.list_messages(run.thread_id) if m.role == "tool"]  # it never ran


def test_a_removed_tool_fails_the_next_turn() -> None:
    store = InMemoryStore()
    script = [tool_call_turn("c1", "lookup", {"order_id": "o-1"}), final_turn("done")]
    old, _ = _app(store, ScriptedModel(script), tools=[lookup, refund])
    handle = old.agents.support.run(input="where is o-1?", thread_key="t1")
    old.execute_step(handle.id, "llm:turn:0")
    old.execute_step(handle.id, "tool:lookup:c1")  # v1 finished the call; turn 1 waits
    new, _ = _app(store, ScriptedModel(script), tools=[lookup])  # the deploy dropped refund
    new.execute_step(handle.id, "llm:turn:1")
    run = store.get_run(handle.id)
    assert run is not None and run.status == "failed"
    assert "AgentChangedError" in str(run.error) and "'refund'" in str(run.error)


def test_an_unchanged_redeploy_is_not_a_change() -> None:
    store = InMemoryStore()
    old, held = _app(store, ScriptedModel(SCRIPT))
    handle = old.agents.support.run(input="where is o-1?", thread_key="t1")
    new, new_held = _app(store, ScriptedModel(SCRIPT))  # the same declaration, rebuilt
    _drain(new, new_held, held.held)
    run = store.get_run(handle.id)
    assert run is not None and run.status == "completed"
