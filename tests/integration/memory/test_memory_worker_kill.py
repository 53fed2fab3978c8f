"""Real Celery workers on PostgreSQL: SIGKILL a worker in the middle of a post-run memory write
(``memory:episode``, ``memory:extract``); the sweep hands the write to a new worker, which leaves
exactly one copy of each episode / entity / edge, and no completed memory step runs again."""

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

from lunora_jobs.store.schema import edges, entities, episodes  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]
HERE = Path(__file__).resolve().parent


def _rows(fleet: Fleet, table: sa.Table, *columns: str) -> list[tuple[object, ...]]:
    query = sa.select(*(table.c[c] for c in columns)).where(table.c.owner == "alice").order_by(*columns)
    with fleet.app.store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(query)]


@pytest.mark.parametrize(("agent", "read", "write"), [
    ("diarist", "memory:recall", "memory:episode"), ("grapher", "memory:traverse", "memory:extract"),
])
def test_sigkill_mid_memory_write_leaves_one_copy(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch, agent: str, read: str,
    write: str,
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
        client = getattr(fleet.app.agents, agent)
        handle = client.run(input="When does order 42 ship?", thread_key=f"{fleet.prefix}-t", owner="alice")
        run_id = str(handle.id)
        assert fleet.wait_entered(1) == [write]  # the write is in the middle of its model call
        run = fleet.app.store.get_run(run_id)
        assert run is not None and run.status == "completed"  # the answer never waits for memory
        first.kill()  # the whole process group: nothing acked, nothing requeued
        fleet.release()
        fleet.start_worker(concurrency=1)
        deadline = time.monotonic() + 60
        with fleet.sweeping(every=0.5) as tick:
            while True:
                row = fleet.app.store.get_step(run_id, write)
                if row is not None and row.status == "completed":
                    break
                assert time.monotonic() < deadline, fleet.explain(run_id)
                tick()
                time.sleep(0.1)
        steps = {s.name: s for s in fleet.app.store.list_steps(run_id)}
        assert set(steps) == {read, "llm:turn:0", write}
        assert all(s.status == "completed" for s in steps.values())
        # Completed steps ran once; only the killed write was claimed again.
        assert {n: s.attempt for n, s in steps.items()} == {read: 1, "llm:turn:0": 1, write: 2}
        if write == "memory:episode":
            assert _rows(fleet, episodes, "run_id", "summary") == [
                (run_id, "The user asked when order 42 ships; told Friday.")]
        else:
            assert _rows(fleet, entities, "normalized") == [("alice",), ("friday",), ("order 42",)]
            assert [r[0] for r in _rows(fleet, edges, "relation")] == ["placed", "ships_on"]
        writes = int(fleet.counters.get(f"{fleet.prefix}:writes") or 0)
        assert writes == 2  # the killed attempt and the one that completed — never after completing
        assert fleet.app.execute_step(run_id, write).status == "replayed"
        assert int(fleet.counters.get(f"{fleet.prefix}:writes") or 0) == writes
    finally:
        fleet.close()
