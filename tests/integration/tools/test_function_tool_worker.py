"""function_tool over a Celery task, and ctx.run over a plain registered function, on a real Celery
worker (prefork): each runs once inside its tool step on a pool process, its result is the tool
message, and a redelivered step replays the memo instead of calling either again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from private_redis import PrivateRedis
from worker_fleet import WorkerFleet, unique_prefix

pytestmark = [pytest.mark.integration, pytest.mark.slow]
HERE = Path(__file__).resolve().parent
REDIS_DB = 5


def test_a_celery_task_and_a_plain_function_run_once_in_their_tool_steps(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    prefix, log = unique_prefix("functions"), tmp_path / "calls.log"
    fleet = WorkerFleet(pg_url, private_redis.url(REDIS_DB), monkeypatch, app_module="function_app",
                        here=HERE, prefix=prefix, env={"FUNCTION_PREFIX": prefix, "FUNCTION_LOG": str(log)})
    app = fleet.app
    try:
        worker = fleet.start_worker(concurrency=2)
        handle = app.agents.billing.run(input="charge and quote", thread_key=f"{prefix}-t")
        run = fleet.wait_status(handle.id, "completed", "failed", timeout=120)
        assert run.status == "completed", (run, fleet.logs())
        messages = app.threads.messages(f"{prefix}-t", trusted=True)
        tool = {m.name: m.content for m in messages if m.role == "tool"}
        assert json.loads(tool["charge"]) == {"charged": 12.5, "currency": "EUR"}
        assert tool["quote"] == "quote: 42"
        calls = [line.split() for line in log.read_text().splitlines()]
        assert sorted(name for name, _ in calls) == ["charge", "double"]
        assert {int(pid) for _, pid in calls} <= set(worker.pool_pids())  # in the worker, not here
        # A redelivery of either step replays its memo: neither function runs again.
        assert app.execute_step(handle.id, "tool:charge:c1").status == "replayed"
        assert app.execute_step(handle.id, "tool:quote:q1").status == "replayed"
        assert len(log.read_text().splitlines()) == 2
    finally:
        fleet.close()
        app.close()
