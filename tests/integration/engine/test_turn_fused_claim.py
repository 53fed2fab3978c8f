"""A turn's run read, claim and history read go out in one PostgreSQL round trip (a tool's run +
turn memo read and claim too), the claim conditioned in SQL on the engine's checks. Every case the
condition refuses must end exactly as the plain path does: a replay, an early turn, a cancelled
run, a call no turn made, a gated call, agents with different leases."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engine_it_support import RecordingDispatcher, get_weather, weather_agent, weather_stub

from lunora_jobs import (
    Lunora,
    ScriptedModel,
    StepFinish,
    define_agent,
    define_tool,
    final_turn,
    tool_call_turn,
    tool_calls_turn,
)
from lunora_jobs.store import create_store
from lunora_jobs.store.records import StepCompletion
from lunora_jobs.store.sql import SqlStore

pytestmark = pytest.mark.integration


@pytest.fixture
def store(pg_url: str) -> Iterator[SqlStore]:
    created = create_store(pg_url)
    assert isinstance(created, SqlStore)
    yield created
    created.close()


def _app(store: SqlStore, *agents: object) -> tuple[Lunora, RecordingDispatcher]:
    dispatcher = RecordingDispatcher()
    script = [tool_call_turn("c1", "get_weather", {"city": "Oslo"}), final_turn("Cold.")] * 3
    app = Lunora(list(agents) or [weather_agent()], store=store, dispatcher=dispatcher,  # type: ignore[arg-type]
                 model=ScriptedModel(script), functions={"weather:lookup": weather_stub})
    return app, dispatcher


def test_a_redelivered_turn_replays_without_a_second_claim(store: SqlStore) -> None:
    app, _ = _app(store)
    handle = app.agents.support.run(input="Oslo?", thread_key="t")
    assert app.execute_step(handle.id, "llm:turn:0").status == "completed"
    assert app.execute_step(handle.id, "llm:turn:0").status == "replayed"
    step = store.get_step(handle.id, "llm:turn:0")
    assert step is not None and step.attempt == 1 and step.generation == 1


def test_an_early_turn_is_skipped_and_leaves_no_row(store: SqlStore) -> None:
    app, _ = _app(store)
    handle = app.agents.support.run(input="Oslo?", thread_key="t")
    assert app.execute_step(handle.id, "llm:turn:2").status == "skipped"
    assert store.get_step(handle.id, "llm:turn:2") is None


def test_a_turn_of_a_cancelled_run_is_not_claimed(store: SqlStore) -> None:
    app, _ = _app(store)
    handle = app.agents.support.run(input="Oslo?", thread_key="t")
    assert app.agents.support.cancel(handle.id)
    assert app.execute_step(handle.id, "llm:turn:0").status == "skipped"
    assert store.get_step(handle.id, "llm:turn:0") is None


def test_a_missing_run_is_reported(store: SqlStore) -> None:
    app, _ = _app(store)
    assert app.execute_step("no-such-run", "llm:turn:0").status == "missing"


def test_agents_with_different_leases_take_the_plain_path(store: SqlStore) -> None:
    slow = define_agent(name="slow", instructions="Slow.", model="offline", tools=[get_weather],
                        step_timeout_s=900.0)
    app, dispatcher = _app(store, weather_agent(), slow)
    handle = app.agents.slow.run(input="Oslo?", thread_key="t")
    assert app.execute_step(handle.id, "llm:turn:0").status == "completed"
    step = store.get_step(handle.id, "llm:turn:0")
    assert step is not None and step.lease_expires_at - step.created_at == app.deps.lease_ms(slow)
    while dispatcher.tasks:
        task = dispatcher.tasks.pop(0)
        app.execute_step(task.run_id, task.step)
    result = app.agents.slow.result(handle.id)
    assert result is not None and result.stopped == "final"


def test_a_tool_step_claims_once_and_replays(store: SqlStore) -> None:
    app, _ = _app(store)
    handle = app.agents.support.run(input="Oslo?", thread_key="t")
    assert app.execute_step(handle.id, "llm:turn:0").status == "completed"
    assert app.execute_step(handle.id, "tool:get_weather:c1").status == "completed"
    assert app.execute_step(handle.id, "tool:get_weather:c1").status == "replayed"
    step = store.get_step(handle.id, "tool:get_weather:c1")
    assert step is not None and step.attempt == 1 and step.status == "completed"


def test_a_call_no_turn_made_is_skipped_and_leaves_no_row(store: SqlStore) -> None:
    app, _ = _app(store)
    handle = app.agents.support.run(input="Oslo?", thread_key="t")
    assert app.execute_step(handle.id, "tool:get_weather:c9").status == "skipped"  # before any turn
    assert app.execute_step(handle.id, "llm:turn:0").status == "completed"
    assert app.execute_step(handle.id, "tool:get_weather:c9").status == "skipped"
    assert store.get_step(handle.id, "tool:get_weather:c9") is None


def test_a_gated_call_waits_for_its_decision(store: SqlStore) -> None:
    gated = define_agent(name="support", instructions="Gated.", model="offline",
                         tools=[define_tool(name="get_weather", description="Weather.",
                                            input_schema={"type": "object"}, needs_approval=True,
                                            execute=lambda args, ctx: "sunny")])
    app, _ = _app(store, gated)
    handle = app.agents.support.run(input="Oslo?", thread_key="t")
    assert app.execute_step(handle.id, "llm:turn:0").status == "completed"
    assert app.execute_step(handle.id, "tool:get_weather:c1").status == "waiting"
    assert store.get_step(handle.id, "tool:get_weather:c1") is None


def _drain(app: Lunora, dispatcher: RecordingDispatcher) -> None:
    while dispatcher.tasks:
        task = dispatcher.tasks.pop(0)
        app.execute_step(task.run_id, task.step)


def test_the_fan_in_reads_only_its_turn_and_still_reports_every_call(store: SqlStore) -> None:
    finished: list[StepFinish] = []
    agent = define_agent(name="support", instructions="Weather.", model="offline", tools=[get_weather],
                         on_step_finish=finished.append)
    dispatcher = RecordingDispatcher()
    script = [tool_call_turn("c1", "get_weather", {"city": "Oslo"}),
              tool_calls_turn([("c2", "get_weather", {"city": "Bergen"}),
                               ("c3", "get_weather", {"city": "Bodø"})]),
              final_turn("Cold.")]
    app = Lunora([agent], store=store, dispatcher=dispatcher, model=ScriptedModel(script),
                 functions={"weather:lookup": weather_stub})
    handle = app.agents.support.run(input="Weather?", thread_key="t")
    _drain(app, dispatcher)
    result = app.agents.support.result(handle.id)
    assert result is not None and result.stopped == "final"
    assert [(f.step_number, [r["tool_call_id"] for r in f.tool_results]) for f in finished] == [
        (0, ["c1"]), (1, ["c2", "c3"]), (2, [])]
    outputs = [r["output"] for f in finished for r in f.tool_results]
    assert [o["city"] for o in outputs] == ["Oslo", "Bergen", "Bodø"]
    # The store call behind it: only the named rows come back.
    names = ["llm:turn:1", "tool:get_weather:c2", "approval:c2"]
    done, rows = store.complete_step_and_list_steps(handle.id, "llm:turn:9", 1, StepCompletion(result=None),
                                                    names=names)
    assert not done and [r.name for r in rows] == ["llm:turn:1", "tool:get_weather:c2"]


def test_stop_when_still_sees_every_turn(store: SqlStore) -> None:
    agent = define_agent(name="support", instructions="Weather.", model="offline", tools=[get_weather],
                         stop_when=lambda ctx: len(ctx.turns) >= 2)
    dispatcher = RecordingDispatcher()
    script = [tool_call_turn(f"c{i}", "get_weather", {"city": "Oslo"}) for i in range(4)] + [final_turn("x")]
    app = Lunora([agent], store=store, dispatcher=dispatcher, model=ScriptedModel(script),
                 functions={"weather:lookup": weather_stub})
    handle = app.agents.support.run(input="Weather?", thread_key="t")
    _drain(app, dispatcher)
    result = app.agents.support.result(handle.id)
    assert result is not None and result.stopped == "stopCondition"
    turns = [s.name for s in store.list_steps(handle.id) if s.name.startswith("llm:")]
    assert turns == ["llm:turn:0", "llm:turn:1"]
