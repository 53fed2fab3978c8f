"""Agent runs on a real Celery fleet: worker subprocesses, Redis broker, PostgreSQL store, Redis lock."""

from __future__ import annotations

import time
from typing import Any

import kombu
import pytest
from fleet_support import Fleet, assert_clean_transcript
from private_redis import PrivateRedis
from suite_settings import service_unavailable, settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]



def _steps(fleet: Fleet, run_id: str) -> dict[str, Any]:
    return {s.name: s for s in fleet.app.store.list_steps(run_id)}


def test_multi_turn_run_with_parallel_tool_calls_completes_on_two_worker_processes(fleet: Fleet) -> None:
    fleet.start_worker(concurrency=2)

    run_id = fleet.start_run("fanout")
    run = fleet.wait_run(run_id, timeout=60)

    assert run.status == "completed", (run, fleet.logs())
    assert run.stopped == "final"
    steps = _steps(fleet, run_id)
    tools = [f"tool:record:f{i}" for i in range(1, 6)]
    assert set(steps) == {"llm:turn:0", "llm:turn:1", "llm:turn:2", *tools}
    assert all(s.status == "completed" and s.attempt == 1 for s in steps.values()), steps
    assert fleet.executions() == dict.fromkeys(tools, 1)
    assert fleet.applied() == dict.fromkeys(tools, 1)
    messages = fleet.app.store.list_messages(run.thread_id)
    assert_clean_transcript(messages, tool_messages=5, assistant_messages=3)
    assert messages[-1].content == "all recorded"
    # Parallel results are appended as they finish, but each under the key of its call position
    # (turn.index), never its completion order — so a replay writes the same keys.
    keys = {m.tool_call_id: m.key for m in messages if m.role == "tool"}
    assert keys == {
        "f1": f"{run_id}:tool:0.0", "f2": f"{run_id}:tool:0.1", "f3": f"{run_id}:tool:0.2",
        "f4": f"{run_id}:tool:1.0", "f5": f"{run_id}:tool:1.1",
    }


def test_tool_calls_of_one_turn_run_in_parallel_and_one_next_turn_follows(fleet: Fleet) -> None:
    fleet.start_worker(concurrency=2)

    run_id = fleet.start_run("lossy")  # turn 0 calls block(l1), record(l2), record(l3) together
    assert fleet.wait_entered(1) == ["tool:block:l1"]
    # While l1 is blocked in one process, its siblings finish in the other: a parallel fan-out.
    deadline = time.monotonic() + 30
    while not all(
        (s := fleet.app.store.get_step(run_id, name)) is not None and s.status == "completed"
        for name in ("tool:record:l2", "tool:record:l3")
    ):
        assert time.monotonic() < deadline, (_steps(fleet, run_id), fleet.logs())
        time.sleep(0.05)
    assert fleet.app.store.get_step(run_id, "llm:turn:1") is None  # the next turn waits for l1
    fleet.release()

    run = fleet.wait_run(run_id, timeout=60)
    assert run.status == "completed", (run, fleet.logs())
    steps = _steps(fleet, run_id)
    assert set(steps) == {
        "llm:turn:0", "llm:turn:1", "llm:turn:2",
        "tool:block:l1", "tool:record:l2", "tool:record:l3", "tool:record:l4",
    }
    assert all(s.attempt == 1 for s in steps.values()), steps
    assert set(fleet.executions().values()) == {1}
    messages = fleet.app.store.list_messages(run.thread_id)
    assert_clean_transcript(messages, tool_messages=4, assistant_messages=3)


def test_concurrent_runs_share_the_fleet_without_crosstalk(fleet: Fleet) -> None:
    fleet.start_worker(concurrency=2)

    run_ids = [fleet.start_run("fanout") for _ in range(4)]
    runs = [fleet.wait_run(run_id, timeout=90) for run_id in run_ids]

    assert [r.status for r in runs] == ["completed"] * 4, fleet.logs()
    for run in runs:
        steps = fleet.app.store.list_steps(run.id)
        assert len(steps) == 8 and all(s.attempt == 1 for s in steps)
        messages = fleet.app.store.list_messages(run.thread_id)
        assert_clean_transcript(messages, tool_messages=5, assistant_messages=3)



def test_start_run_task_starts_a_run_as_beat_cron_entries_do(fleet: Fleet) -> None:
    from workers.dispatch import CeleryDispatcher

    fleet.start_worker(concurrency=2)
    celery = CeleryDispatcher(fleet.broker_url, fleet.queue).app
    thread_key = f"{fleet.prefix}-cron"
    celery.send_task(
        "lunora.start_run", kwargs={"agent": "fanout", "input": "nightly", "thread_key": thread_key},
        queue=fleet.queue,
    )

    deadline = time.monotonic() + 60
    while not (runs := fleet.app.store.list_runs(status="completed")):
        assert time.monotonic() < deadline, fleet.logs()
        time.sleep(0.1)
    (run,) = runs
    assert run.agent == "fanout"
    assert fleet.app.threads.get(thread_key, trusted=True).id == run.thread_id
    first = fleet.app.store.list_messages(run.thread_id)[0]
    assert (first.role, first.content) == ("user", "nightly")

def test_cancel_revokes_the_runs_queued_tasks(fleet: Fleet) -> None:
    worker = fleet.start_worker(concurrency=1, loglevel="INFO")  # l2/l3 wait in Redis while l1 blocks
    run_id = fleet.start_run("lossy")
    assert fleet.wait_entered(1) == ["tool:block:l1"]
    assert fleet.broker.llen(fleet.queue) == 2

    assert fleet.app.agents.lossy.cancel(run_id) is True
    fleet.release()

    # The worker drains the queue, dropping the revoked tasks instead of running them.
    deadline = time.monotonic() + 30
    while worker.log().count("Discarding revoked task") < 2:
        assert time.monotonic() < deadline, worker.log()[-3000:]
        time.sleep(0.05)
    assert f"{run_id}:tool:record:l2" in worker.log() and f"{run_id}:tool:record:l3" in worker.log()
    assert fleet.app.store.get_run(run_id).status == "cancelled"
    assert fleet.app.store.get_step(run_id, "tool:record:l2") is None
    assert fleet.app.store.get_step(run_id, "tool:record:l3") is None
    assert set(fleet.executions()) == {"tool:block:l1"}


def test_the_same_fleet_runs_on_rabbitmq(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection: Any = kombu.Connection  # type: ignore[attr-defined]
    try:
        connection(settings.amqp_url, connect_timeout=2).ensure_connection(max_retries=1)
    except Exception as exc:  # pragma: no cover - only when the server is down
        service_unavailable(f"RabbitMQ not reachable: {exc}")
    fleet = Fleet(pg_url, private_redis, monkeypatch, broker_url=settings.amqp_url)
    try:
        fleet.start_worker(concurrency=2)
        run_id = fleet.start_run("fanout")
        run = fleet.wait_run(run_id, timeout=60)
        assert run.status == "completed", fleet.explain(run_id)
        assert len(fleet.app.store.list_steps(run_id)) == 8
        assert set(fleet.executions().values()) == {1}
    finally:
        fleet.close()
