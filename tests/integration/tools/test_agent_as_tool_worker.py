"""agent_as_tool on real Celery workers: a worker SIGKILLed while the lead's delegating step starts
the child (before its run row exists, or after it exists but before the lead recorded the call), or
while the child runs, still leaves exactly one child run, and the lead completes with the child's
answer as the tool result (recovered by a second worker and the sweep)."""

from __future__ import annotations

from pathlib import Path

import pytest
from delegate_app import CHILD_ANSWER, LEAD_ANSWER
from private_redis import PrivateRedis
from worker_fleet import WorkerFleet, unique_prefix

from lunora_jobs.engine.children import child_run_id

pytestmark = [pytest.mark.integration, pytest.mark.slow]
HERE = Path(__file__).resolve().parent
REDIS_DB = 4
SWEEP_GRACE_MS = 1000


@pytest.mark.parametrize("kill_at", ["start", "created", "child"])
def test_a_sigkill_leaves_one_child_and_the_lead_gets_its_answer(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kill_at: str,
) -> None:
    gate = "dig" if kill_at == "child" else kill_at
    prefix = unique_prefix("delegate")
    env = {"DELEGATE_PREFIX": prefix, "DELEGATE_GATE_DIR": str(tmp_path), "DELEGATE_KILL_AT": kill_at,
           "LUNORA_LEASE_S": "2"}
    fleet = WorkerFleet(pg_url, private_redis.url(REDIS_DB), monkeypatch, app_module="delegate_app",
                        here=HERE, prefix=prefix, env=env)
    app = fleet.app
    try:
        first = fleet.start_worker(concurrency=2)
        handle = app.agents.lead.run(input="Why is the sky blue?", thread_key=f"{prefix}-t")
        child_id = child_run_id(handle.id, "research", "c1")
        entered = tmp_path / f"{gate}.entered"
        fleet.wait_for(f"the {gate} gate", entered.exists)
        first.kill()  # the whole process group, mid-step: nothing is acked or recorded
        (tmp_path / f"{gate}.open").touch()
        fleet.start_worker(concurrency=2)

        def finished() -> object:
            app.sweep(grace_ms=SWEEP_GRACE_MS)  # what beat's tick sends: lapsed leases, lost wakes
            run = app.store.get_run(handle.id)
            return run if run is not None and run.status in ("completed", "failed", "cancelled") else None

        run = fleet.wait_for("the lead run to end", finished, timeout=120)
        steps = [(s.name, s.status, s.attempt) for s in app.store.list_steps(handle.id)]
        assert (run.status, run.result["text"]) == ("completed", LEAD_ANSWER), (run, steps, fleet.logs())
        children = [r for r in app.store.list_runs() if r.agent == "researcher"]
        assert [c.id for c in children] == [child_id]
        assert children[0].status == "completed" and children[0].result["text"] == CHILD_ANSWER
        tool = [m for m in app.threads.messages(f"{prefix}-t", trusted=True) if m.role == "tool"]
        assert [m.content for m in tool] == [CHILD_ANSWER]
        # start, dig: the killed attempt and the recovery's; created: once (the child never restarts).
        assert len(entered.read_text().split()) == (1 if kill_at == "created" else 2)
    finally:
        fleet.close()
        app.close()
