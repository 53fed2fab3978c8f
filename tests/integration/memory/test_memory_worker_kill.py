"""Real Celery workers on PostgreSQL: SIGKILL a worker in the middle of a post-run memory write; the
sweep hands the write to a new worker, which records exactly one episode, and no completed memory
step runs again."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

_FLEET_DIR = str(Path(__file__).resolve().parents[1] / "workers")
if _FLEET_DIR not in sys.path:
    sys.path.insert(0, _FLEET_DIR)

from fleet_support import Fleet  # noqa: E402
from private_redis import PrivateRedis  # noqa: E402

from lunora_jobs.store.schema import episodes  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]
HERE = Path(__file__).resolve().parent


def test_sigkill_mid_episode_write_records_one_episode(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(HERE))
    fleet = Fleet(pg_url, private_redis, monkeypatch)
    fleet.env["LUNORA_APP"] = "memory_fleet_app:build_app"
    fleet.env["PYTHONPATH"] = f"{HERE}:{fleet.env['PYTHONPATH']}"
    import memory_fleet_app

    fleet.app = memory_fleet_app.build_app()
    fleet.app.store.ensure_tables()
    try:
        first = fleet.start_worker(concurrency=1)
        run_id = str(fleet.app.agents.diarist.run(input="When does order 42 ship?",
                                                  thread_key=f"{fleet.prefix}-t", owner="alice").id)
        assert fleet.wait_entered(1) == ["memory:episode"]  # the write is in the middle of its model call
        run = fleet.app.store.get_run(run_id)
        assert run is not None and run.status == "completed"  # the answer never waits for memory
        first.kill()  # the whole process group: nothing acked, nothing requeued
        fleet.release()
        fleet.start_worker(concurrency=1)
        deadline = time.monotonic() + 60
        with fleet.sweeping(every=0.5) as tick:
            while True:
                row = fleet.app.store.get_step(run_id, "memory:episode")
                if row is not None and row.status == "completed":
                    break
                assert time.monotonic() < deadline, fleet.explain(run_id)
                tick()
                time.sleep(0.1)
        steps = {s.name: s for s in fleet.app.store.list_steps(run_id)}
        assert set(steps) == {"memory:recall", "llm:turn:0", "memory:episode"}
        assert all(s.status == "completed" for s in steps.values())
        # Completed steps ran once; only the killed write was claimed again.
        assert {n: s.attempt for n, s in steps.items()} == {
            "memory:recall": 1, "llm:turn:0": 1, "memory:episode": 2}
        assert steps["memory:episode"].result == {
            "summary": "The user asked when order 42 ships; told Friday.", "inserted": True}
        with fleet.app.store.engine.connect() as conn:
            rows = conn.execute(sa.select(episodes.c.run_id, episodes.c.summary)
                                .where(episodes.c.owner == "alice")).all()
        assert [tuple(r) for r in rows] == [(run_id, "The user asked when order 42 ships; told Friday.")]
        summaries = int(fleet.counters.get(f"{fleet.prefix}:summaries") or 0)
        assert summaries == 2  # the killed attempt and the one that completed — never after completing
        assert fleet.app.execute_step(run_id, "memory:episode").status == "replayed"
        assert int(fleet.counters.get(f"{fleet.prefix}:summaries") or 0) == summaries
    finally:
        fleet.close()
