"""A step's lease names the pool process that runs it, not the worker's main process.

The worker's preflight loads the app in the main process, and the pool processes inherit it: they
used to inherit its lease owner (``host:<main pid>:...``) too, so the ledger could not tell which
process held a step (found by the chaos run, which reads the steps a SIGKILLed pool process held).
"""

from __future__ import annotations

import pytest
from fleet_support import Fleet
from private_redis import PrivateRedis

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_running_step_is_leased_by_the_pool_process_that_runs_it(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = Fleet(pg_url, private_redis, monkeypatch)
    try:
        worker = fleet.start_worker(concurrency=2)
        run_id = fleet.start_run("crashy")
        assert fleet.wait_entered(1) == ["tool:block:c3"]  # the block tool now holds its step
        pid = fleet.pid_of("tool:block:c3")
        assert pid in worker.pool_pids() and pid != worker.pid
        step = fleet.app.store.get_step(run_id, "tool:block:c3")
        assert step is not None and step.status == "running", fleet.explain(run_id)
        _host, owner_pid, _suffix = str(step.lease_owner).split(":")
        assert int(owner_pid) == pid, (step.lease_owner, pid, worker.pid)
        fleet.release()
        assert fleet.wait_run(run_id, timeout=60).status == "completed", fleet.explain(run_id)
    finally:
        fleet.close()
