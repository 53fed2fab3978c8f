"""Step time limits on a real worker: a hung tool frees its process within the limit and never runs
beside its own retry.

The worker loads ``limits_app`` (``step_timeout_s=2``): its step tasks get Celery's soft time limit
of 2 s and a hard one of 2 s + ``HARD_LIMIT_MARGIN_S`` (``workers.time_limits``). One pool process,
so "free again" is visible as the next attempt starting on it.

- ``hang`` sleeps for two minutes: at the soft limit the attempt fails cleanly
  (``SoftTimeLimitExceeded``), is retried once (``max_attempts=2``), fails again, and the tool's
  error becomes its result; the run completes.
- ``stubborn`` swallows the soft limit: the hard limit kills its process, the lease it no longer
  renews lapses, the sweep retries the step, and after ``max_attempts`` the run fails with
  ``StepExhaustedError`` instead of looping.
In both, at most one execution of the tool ever runs at a time. Both run on the prefork pool (whose
parent enforces the limits) and on the solo pool (``workers.solo_limits``: the soft limit raised in
the step, the process replaced by a fresh one at the hard limit, the same pid consuming again).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chaos_support import chaos_fleet, wait_runs
from fleet_support import Fleet
from limits_app import LIMIT_S
from private_redis import PrivateRedis

from lunora_jobs.engine.backoff import BASE_MS
from workers.time_limits import HARD_LIMIT_MARGIN_S

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HERE = Path(__file__).resolve().parent


def _fleet(pg_url: str, redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch) -> Fleet:
    fleet = chaos_fleet(pg_url, redis, monkeypatch)
    fleet.env["LUNORA_APP"] = "limits_app:build_app"
    monkeypatch.setenv("LUNORA_APP", "limits_app:build_app")
    import limits_app

    fleet.app.store.engine.dispose()
    fleet.app = limits_app.build_app()
    return fleet


def _entered_at(fleet: Fleet) -> list[float]:
    return [float(item.rsplit("@", 1)[1]) for item in fleet.counters.lrange(f"{fleet.prefix}:entered", 0, -1)]


POOLS = pytest.mark.parametrize("pool", ["prefork", "solo"])


@POOLS
def test_a_tool_past_its_soft_limit_fails_its_attempt_and_frees_the_process(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch, pool: str
) -> None:
    fleet = _fleet(pg_url, private_redis, monkeypatch)
    try:
        fleet.start_worker(concurrency=1, pool=pool)
        run_id = fleet.start_run("limited")
        with fleet.sweeping(every=0.5) as tick:
            run = wait_runs(fleet, [run_id], timeout=60, tick=tick)[run_id]
        assert run.status == "completed", fleet.explain(run_id)
        step = fleet.app.store.get_step(run_id, "tool:hang:h1")
        assert step is not None and step.status == "completed" and step.attempt == 2, fleet.explain(run_id)
        assert "SoftTimeLimitExceeded" in str(step.result), step.result  # the tool's error, as its result
        entered = _entered_at(fleet)
        assert len(entered) == 2, entered
        # The second attempt started on the same (only) process after the first hit the limit: the
        # limit, the retry's backoff (at most BASE_MS for a first retry) and a busy host's slack.
        assert LIMIT_S <= entered[1] - entered[0] < LIMIT_S + BASE_MS / 1000 + 3.0, entered
        assert fleet.counters.get(f"{fleet.prefix}:peak") == "1"
        assert fleet.counters.get(f"{fleet.prefix}:running") == "0"
    finally:
        fleet.close()


@POOLS
def test_a_tool_deaf_to_the_soft_limit_is_killed_at_the_hard_one_and_never_runs_twice_at_once(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch, pool: str
) -> None:
    fleet = _fleet(pg_url, private_redis, monkeypatch)
    try:
        worker = fleet.start_worker(concurrency=1, pool=pool)
        run_id = fleet.start_run("deaf")
        hard = LIMIT_S + HARD_LIMIT_MARGIN_S
        with fleet.sweeping(every=0.5) as tick:
            run = wait_runs(fleet, [run_id], timeout=4 * hard + 30, tick=tick)[run_id]
        assert run.status == "failed" and "StepExhaustedError" in str(run.error), fleet.explain(run_id)
        entered = _entered_at(fleet)
        assert len(entered) == 2, entered
        # The hard limit, counted from the task's start, killed the first execution before the retry
        # started (once the lease it no longer renewed lapsed): never two at once.
        assert entered[1] - entered[0] >= hard, entered
        if pool == "solo":  # the retry ran on the replaced process: the same worker, consuming again
            assert worker.proc is not None and worker.proc.poll() is None
            assert "ran past its hard time limit; replacing this solo worker process" in worker.log()
    finally:
        fleet.close()
