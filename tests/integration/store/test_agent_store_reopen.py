"""Contract: ``reopen_run`` — a failed run back to running, its failed steps given fresh attempts."""

from __future__ import annotations

import pytest
from agent_store_support import FakeClock

from lunora_jobs.store import AgentStore, NewRun, StepCompletion

pytestmark = pytest.mark.integration

LEASE = 30_000


def _failed_run(store: AgentStore) -> None:
    thread = store.ensure_thread("t1", owner="alice")
    store.create_run(NewRun(id="r1", thread_id=thread.id, agent="support", input={"q": "hi"}, owner="alice"))
    done = store.claim_step("r1", "llm:turn:0", owner="w1", lease_ms=LEASE)
    assert store.complete_step("r1", "llm:turn:0", done.step.generation, StepCompletion(result={"t": 0}))
    bad = store.claim_step("r1", "llm:turn:1", owner="w1", lease_ms=LEASE, max_attempts=1)
    assert store.fail_step("r1", "llm:turn:1", bad.step.generation, "TimeoutError: slow", terminal=True)
    assert store.transition_run("r1", ("running",), status="failed", error="step failed")


def test_a_failed_run_reopens_with_fresh_attempts_for_its_failed_step_only(
    store: AgentStore, clock: FakeClock
) -> None:
    _failed_run(store)
    before = store.get_step("r1", "llm:turn:1")
    assert before is not None and (before.status, before.attempt) == ("failed", 1)
    clock.advance(5)
    assert store.reopen_run("r1", input={"q": "hi", "deadline": 9}, step_names=["llm:turn:1"])
    run = store.get_run("r1")
    assert run is not None
    assert (run.status, run.error, run.stopped, run.result, run.input) == (
        "running", None, None, None, {"q": "hi", "deadline": 9})
    assert run.updated_at == clock.now
    fresh = store.get_step("r1", "llm:turn:1")
    assert fresh is not None
    assert (fresh.status, fresh.attempt, fresh.lease_expires_at) == ("running", 0, 0)
    assert fresh.generation == before.generation + 1  # a late writer of the old attempt is fenced out
    kept = store.get_step("r1", "llm:turn:0")
    assert kept is not None and (kept.status, kept.result) == ("completed", {"t": 0})
    # The next claim takes the reopened row at once: attempt 1 of a fresh budget.
    again = store.claim_step("r1", "llm:turn:1", owner="w2", lease_ms=LEASE, max_attempts=1)
    assert (again.outcome, again.step.attempt, again.step.lease_owner) == ("claimed", 1, "w2")
    assert not store.fail_step("r1", "llm:turn:1", before.generation, "stale", terminal=True)


def test_only_a_failed_run_reopens(store: AgentStore) -> None:
    _failed_run(store)
    assert store.reopen_run("r1", input={"q": "hi"}, step_names=["llm:turn:1"])
    assert not store.reopen_run("r1", input={"q": "changed"}, step_names=["llm:turn:1"])  # running now
    run = store.get_run("r1")
    assert run is not None and run.input == {"q": "hi"}
    assert not store.reopen_run("nope", input=None, step_names=[])
