"""A real worker started on a pool other than prefork or solo refuses to start, with one line, before
it takes a step: Celery's thread pool would run steps without their time limits (``workers.pools``)."""

from __future__ import annotations

import pytest
from fleet_support import Fleet

from workers.preflight import EX_CONFIG


@pytest.mark.integration
@pytest.mark.slow
def test_a_worker_on_the_thread_pool_refuses_to_start_and_takes_no_step(fleet: Fleet) -> None:
    run_id = fleet.start_run("fanout")  # waiting on the queue: a worker that consumed would take it
    with pytest.raises(RuntimeError, match="worker exited with"):
        fleet.start_worker(concurrency=2, loglevel="INFO", pool="threads")
    worker = fleet.workers[-1]
    assert worker.proc is not None and worker.proc.returncode == EX_CONFIG, worker.log()
    lines = [line for line in worker.log().splitlines() if "CRITICAL" in line]
    assert len(lines) == 1, worker.log()
    assert "--pool threads: a Lunora worker runs its steps on the prefork or the solo pool only" in lines[0]
    assert "Start the worker with --pool prefork (the default) or --pool solo." in lines[0]
    assert fleet.app.store.list_steps(run_id) == [], fleet.explain(run_id)
