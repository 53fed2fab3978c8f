"""Retry policies, ``app.runs.retry`` and ``run_timeout_s`` on a real Celery fleet (worker
subprocesses, Redis broker, PostgreSQL store)."""

from __future__ import annotations

import itertools
import time

import pytest
from fleet_app import RETRY_BASE_S, RETRY_CAP_S, RUN_TIMEOUT_S
from fleet_support import Fleet

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _call_times(fleet: Fleet, text: str) -> list[float]:
    return [float(t) for t in fleet.counters.lrange(f"{fleet.prefix}:calls:{text}", 0, -1)]


def test_the_agents_retry_policy_paces_and_bounds_attempts_on_the_workers(fleet: Fleet) -> None:
    fleet.start_worker(concurrency=2)
    patient = fleet.app.agents.patient.run(input="p-1", thread_key=f"{fleet.prefix}-p")
    stubborn = fleet.app.agents.stubborn.run(input="s-1", thread_key=f"{fleet.prefix}-s")
    run = fleet.wait_run(patient.id, timeout=60)
    # The model is down for 3 calls: max_attempts=3 (not the default 5) fails the run on the 3rd.
    assert run.status == "failed" and "after 3 attempt(s)" in (run.error or ""), (run, fleet.logs())
    times = _call_times(fleet, "p-1")
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # Full jitter under the policy: the 1st wait is at most base (0.4 s), the 2nd at most the cap
    # (0.5 s, not 0.8); the slack is the broker and a claim on a loaded machine.
    assert len(gaps) == 2 and gaps[0] < RETRY_BASE_S + 1.5 and gaps[1] < RETRY_CAP_S + 1.5, gaps
    # The model is back: a retry resumes the failed turn with fresh attempts, on the workers.
    assert fleet.app.runs.retry(patient.id, trusted=True) == ["llm:turn:0"]
    run = fleet.wait_run(patient.id, timeout=60)
    assert (run.status, run.result["text"]) == ("completed", "answered on call 4"), (run, fleet.logs())
    step = fleet.app.store.get_step(patient.id, "llm:turn:0")
    assert step is not None and (step.status, step.attempt) == ("completed", 1)
    given_up = fleet.wait_run(stubborn.id, timeout=60)
    assert given_up.status == "failed" and "ValueError: call 1 failed" in (given_up.error or "")
    assert len(_call_times(fleet, "s-1")) == 1  # give_up_on: never a second attempt


def test_a_run_past_its_run_timeout_fails_and_a_retry_gives_it_a_fresh_budget(fleet: Fleet) -> None:
    fleet.start_worker(concurrency=2)
    started = time.monotonic()
    run_id = fleet.app.agents.timed.run(input="go", thread_key=f"{fleet.prefix}-t").id
    deadline = time.monotonic() + 30
    while not fleet.counters.llen(f"{fleet.prefix}:entered"):
        assert time.monotonic() < deadline, fleet.logs()
        time.sleep(0.05)
    while time.monotonic() - started < RUN_TIMEOUT_S + 0.5:  # hold the tool past the run's deadline
        time.sleep(0.05)
    fleet.counters.set(f"{fleet.prefix}:release", "1")
    run = fleet.wait_run(run_id, timeout=60)
    assert run.status == "failed", (run, fleet.logs())
    assert (run.error or "").startswith("RunTimeoutError:") and "llm:turn:1" in (run.error or "")
    assert fleet.applied() == {"tool:block:t1": 1}
    # Nothing left leased: the turn was refused before its claim (or, claimed with the read, closed).
    assert all(s.status != "running" for s in fleet.app.store.list_steps(run_id))
    turn = fleet.app.store.get_step(run_id, "llm:turn:1")
    # A retry: a fresh time budget; the memoized tool is not run again.
    assert fleet.app.runs.retry(run_id, trusted=True) == ([] if turn is None else ["llm:turn:1"])
    done = fleet.wait_run(run_id, timeout=60)
    assert (done.status, done.result["text"]) == ("completed", "in time"), (done, fleet.logs())
    assert fleet.executions() == {"tool:block:t1": 1}


def test_the_sweep_fails_a_run_stuck_past_its_run_timeout(fleet: Fleet) -> None:
    fleet.start_worker(concurrency=2)
    fleet.start_beat()
    run_id = fleet.app.agents.timed.run(input="go", thread_key=f"{fleet.prefix}-s").id
    try:
        # The tool blocks and nothing releases it: no step boundary comes, so the sweep must act.
        run = fleet.wait_run(run_id, timeout=60)
        assert run.status == "failed", (run, fleet.logs())
        assert (run.error or "").startswith("RunTimeoutError:") and "found by the sweep" in (run.error or "")
        deadline = time.monotonic() + 10  # the thread is freed just after the run's status is written
        while True:
            thread = fleet.app.store.get_thread_by_id(run.thread_id)
            assert thread is not None
            if thread.active_run_id is None and thread.status == "failed":
                break
            assert time.monotonic() < deadline, (thread, fleet.logs())
            time.sleep(0.05)
    finally:
        fleet.counters.set(f"{fleet.prefix}:release", "1")
