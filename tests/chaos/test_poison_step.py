"""A step that kills its worker process every time stops after max_attempts and fails the run."""

from __future__ import annotations

import pytest
from fleet_support import Fleet
from private_redis import PrivateRedis

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_poison_tool_fails_the_run_after_max_attempts_instead_of_looping(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = Fleet(pg_url, private_redis, monkeypatch)
    try:
        worker = fleet.start_worker(concurrency=2)
        run_id = fleet.start_run("poison")  # max_attempts=2; its only tool SIGKILLs its process

        with fleet.sweeping(every=0.5) as tick:
            run = fleet.wait_run(run_id, timeout=90, tick=tick)

        assert run.status == "failed", fleet.explain(run_id)
        assert "StepExhaustedError" in (run.error or "") and "tool:crash:p1" in (run.error or "")
        step = fleet.app.store.get_step(run_id, "tool:crash:p1")
        assert step is not None and step.attempt == 2
        assert fleet.executions() == {"tool:crash:p1": 2}  # never a third execution
        assert fleet.app.store.get_step(run_id, "llm:turn:1") is None
        assert worker.proc is not None and worker.proc.poll() is None  # the worker itself survived
    finally:
        fleet.close()
