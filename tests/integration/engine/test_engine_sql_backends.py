"""The same engine over SqlStore on PostgreSQL (plus MariaDB and SQLite) with the Redis run lock."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
from engine_it_support import (
    TOOL_RUNS,
    FakeClock,
    RecordingDispatcher,
    count_statements,
    weather_agent,
    weather_stub,
)

from lunora_jobs import Lunora, ScriptedModel, Usage, final_turn, tool_call_turn, tool_calls_turn
from lunora_jobs.engine.locks import RedisLock
from lunora_jobs.store import SqlStore, create_store
from lunora_jobs.testing import RecordingModel, agent_harness

pytestmark = pytest.mark.integration

LEASE_MS = 330_000


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[SqlStore]:
    store = create_store(pg_url)
    yield store
    store.close()


@pytest.fixture
def redis_lock(redis_url: str, redis_prefix: str) -> Iterator[RedisLock]:
    lock = RedisLock.from_url(redis_url, prefix=redis_prefix)
    yield lock
    client: redis.Redis = lock.client
    leftovers = list(client.scan_iter(f"{redis_prefix}:*"))
    if leftovers:
        client.delete(*leftovers)
    client.close()
    assert leftovers == [], "every run lock must be released"


def _weather_app(
    store: SqlStore, lock: RedisLock, dispatcher: RecordingDispatcher, model: ScriptedModel, **agent: Any
) -> Lunora:
    """The support agent on a real store and Redis lock, steps recorded instead of enqueued."""
    return Lunora(
        [weather_agent(**agent)], store=store, dispatcher=dispatcher, lock=lock, model=model,
        functions={"weather:lookup": weather_stub},
    )


@pytest.mark.parametrize("url_fixture", ["pg_url", "mysql_url", "sqlite_url"])
def test_seed_flow_on_every_sql_backend(
    url_fixture: str, request: pytest.FixtureRequest, redis_lock: RedisLock
) -> None:
    store = create_store(request.getfixturevalue(url_fixture))
    try:
        harness = agent_harness(
            weather_agent(),
            script=[
                tool_call_turn("call_1", "get_weather", {"city": "Berlin"}, usage=Usage(40, 8)),
                final_turn("It's sunny in Berlin.", usage=Usage(60, 12)),
            ],
            functions={"weather:lookup": weather_stub},
            store=store,
            lock=redis_lock,
        )
        result = harness.run(input="weather in Berlin?", thread_key="t1", owner="user-7")
        assert (result.status, result.stopped, result.turns) == ("completed", "final", 2)
        assert result.usage == Usage(100, 20)
        assert [m.role for m in harness.messages("t1")] == ["user", "assistant", "tool", "assistant"]
        assert harness.dispatches == [{"path": "weather:lookup", "args": {"city": "Berlin"}}]
        thread = harness.thread("t1")
        assert (thread.input_tokens, thread.output_tokens, thread.active_run_id) == (100, 20, None)
        assert store.usage_between("user-7", 0, 2**62).total == 120
        # Replays on the real database: memo back, nothing re-run, nothing duplicated.
        for step in ("llm:turn:0", "tool:get_weather:call_1", "llm:turn:1"):
            assert harness.app.execute_step(result.run_id, step).status == "replayed"
        assert len(harness.messages("t1")) == 4 and len(harness.model.calls) == 2
    finally:
        store.close()


def test_concurrent_deliveries_of_one_step_run_it_once(pg_store: SqlStore, redis_lock: RedisLock) -> None:
    dispatcher = RecordingDispatcher()
    model = ScriptedModel([tool_call_turn("c1", "get_weather", {"city": "Oslo"}), final_turn("Cold.")])
    app = _weather_app(pg_store, redis_lock, dispatcher, model)
    handle = app.agents.support.run(input="Oslo?", thread_key="t")
    assert app.execute_step(handle.id, "llm:turn:0").status == "completed"
    step = "tool:get_weather:c1"
    TOOL_RUNS.clear()
    with ThreadPoolExecutor(8) as pool:
        outcomes = sorted(o.status for o in pool.map(lambda _: app.execute_step(handle.id, step), range(8)))
    assert outcomes.count("completed") == 1
    assert set(outcomes) <= {"completed", "busy", "replayed"}
    assert [step] == TOOL_RUNS
    assert dispatcher.steps().count("llm:turn:1") >= 1
    assert app.execute_step(handle.id, "llm:turn:1").status == "completed"
    assert app.agents.support.wait(handle.id, timeout=5).text == "Cold."
    assert [m.role for m in app.threads.messages("t")] == ["user", "assistant", "tool", "assistant"]


def test_parallel_tools_finish_in_any_order_and_the_ledger_dispatches_the_next_turn(
    pg_store: SqlStore, redis_lock: RedisLock
) -> None:
    dispatcher = RecordingDispatcher()
    model = ScriptedModel(
        [
            tool_calls_turn([(f"c{i}", "get_weather", {"city": f"City{i}"}) for i in range(4)]),
            final_turn("Four cities."),
        ]
    )
    app = _weather_app(pg_store, redis_lock, dispatcher, model)
    handle = app.agents.support.run(input="four cities", thread_key="t")
    app.execute_step(handle.id, "llm:turn:0")
    tools = [s for s in dispatcher.steps() if s.startswith("tool:")]
    assert tools == [f"tool:get_weather:c{i}" for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        assert all(
            o.status == "completed"
            for o in pool.map(lambda s: app.execute_step(handle.id, s), reversed(tools))
        )
    next_turns = [s for s in dispatcher.steps() if s == "llm:turn:1"]
    assert 1 <= len(next_turns) <= 4  # at least one finisher saw all done; duplicates are allowed...
    recording = RecordingModel(model)
    app.deps.model_override = recording
    with ThreadPoolExecutor(4) as pool:  # ...because however many arrive, exactly one turn runs
        outcomes = [o.status for o in pool.map(lambda s: app.execute_step(handle.id, s), next_turns * 2)]
    assert outcomes.count("completed") == 1 and len(recording.calls) == 1
    assert app.agents.support.result(handle.id).stopped == "final"
    assert model_prompt_tool_ids(app, "t") == ["c0", "c1", "c2", "c3"]
    assert [m["tool_call_id"] for m in recording.calls[0] if m["role"] == "tool"] == ["c0", "c1", "c2", "c3"]


def model_prompt_tool_ids(app: Lunora, key: str) -> list[str]:
    return [m.tool_call_id or "" for m in app.threads.messages(key) if m.role == "tool"]


def test_crash_takeover_and_poison_on_postgres(pg_url: str, redis_lock: RedisLock) -> None:
    clock = FakeClock()
    store = create_store(pg_url, clock=clock)
    try:
        dispatcher = RecordingDispatcher()
        model = ScriptedModel([tool_call_turn("c1", "get_weather", {"city": "Rome"}), final_turn("Warm.")])
        app = _weather_app(store, redis_lock, dispatcher, model, max_attempts=2)
        handle = app.agents.support.run(input="Rome?", thread_key="t")
        # A worker claims turn 0 and dies: nothing recorded, the lease runs.
        assert store.claim_step(handle.id, "llm:turn:0", owner="dead", lease_ms=LEASE_MS).outcome == "claimed"
        assert app.execute_step(handle.id, "llm:turn:0").status == "busy"
        clock.advance(LEASE_MS + 1)
        assert app.execute_step(handle.id, "llm:turn:0").status == "completed"  # taken over: attempt 2
        assert store.get_step(handle.id, "llm:turn:0").attempt == 2
        # The tool's worker dies twice: max_attempts=2 is spent, the third delivery fails the run.
        for _ in range(2):
            assert (
                store.claim_step(
                    handle.id, "tool:get_weather:c1", owner="dead", lease_ms=LEASE_MS, max_attempts=2
                ).outcome
                == "claimed"
            )
            clock.advance(LEASE_MS + 1)
        report = app.sweep()
        assert [t.step for t in report.dispatched] == ["tool:get_weather:c1"]
        assert app.execute_step(handle.id, "tool:get_weather:c1").status == "failed"
        result = app.agents.support.wait(handle.id, timeout=5)
        assert result.status == "failed" and "StepExhaustedError" in (result.error or "")
    finally:
        store.close()


def test_round_trips_per_step_on_postgres(pg_store: SqlStore, redis_lock: RedisLock) -> None:
    dispatcher = RecordingDispatcher()
    model = ScriptedModel([tool_call_turn("c1", "get_weather", {"city": "Oslo"}), final_turn("Cold.")])
    app = _weather_app(pg_store, redis_lock, dispatcher, model)
    handle = app.agents.support.run(input="Oslo?", thread_key="t")
    with count_statements(pg_store.engine) as turn_sql:
        app.execute_step(handle.id, "llm:turn:0")
    with count_statements(pg_store.engine) as tool_sql:
        app.execute_step(handle.id, "tool:get_weather:c1")
    with count_statements(pg_store.engine) as final_sql:
        app.execute_step(handle.id, "llm:turn:1")
    print(f"\nSQL statements per step: turn={len(turn_sql)} tool={len(tool_sql)} final turn={len(final_sql)}")
    print("turn:", turn_sql, "\ntool:", tool_sql, "\nfinal:", final_sql)
    # Nothing through SQLAlchemy: every hot-path statement goes to psycopg directly (one statement
    # each: turn = run read + claim + history read, then the completion; tool = run read joined with
    # its turn memo + claim, then completion + fan-in ledger read, pipelined).
    # test_engine_roundtrips counts the round trips on the wire.
    assert turn_sql == [] == final_sql
    assert tool_sql == []
    assert app.agents.support.result(handle.id).stopped == "final"
