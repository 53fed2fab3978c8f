"""Starting is atomic: with the broker down, ``run()`` still returns the handle of a run that then
executes, once (issue 8, part 4: the transactional outbox of ``engine/outbox.py``).

The broker is a ``redis-server`` of the test's own (``PrivateRedis``), stopped before the start and
started again afterwards on the same port; the fleet's locks and tool counters stay on the test's
private Redis. The sweep's grace is set far beyond the test, so only the outbox can start the run: the
sweep's quiet-run path (which would also find it, one grace period later) plays no part.
"""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa
from fleet_support import Fleet, assert_clean_transcript
from private_redis import PrivateRedis, RedisUnavailable

from lunora_jobs.store.schema import outbox

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NO_QUIET_RECOVERY_MS = "600000"
"""The sweep's grace in this test: a quiet run is not re-planned within it, the outbox must do it."""


def _outbox_rows(fleet: Fleet, run_id: str) -> list[str]:
    query = sa.select(outbox.c.step).where(outbox.c.run_id == run_id)
    with fleet.app.store.engine.connect() as conn:
        return [str(row[0]) for row in conn.execute(query)]


def test_a_start_while_the_broker_is_down_returns_and_the_run_completes_once_it_is_back(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    try:
        broker = PrivateRedis.start()
    except RedisUnavailable as exc:
        pytest.fail(str(exc))
    fleet = Fleet(pg_url, private_redis, monkeypatch, broker_url=broker.url(1))
    try:
        monkeypatch.setenv("LUNORA_SWEEP_GRACE_MS", NO_QUIET_RECOVERY_MS)
        fleet.env["LUNORA_SWEEP_GRACE_MS"] = NO_QUIET_RECOVERY_MS
        broker.pause()  # the outage

        started = time.monotonic()
        run_id = fleet.start_run("fanout")  # returns: the run is recorded, its dispatch is not sent
        took = time.monotonic() - started
        run = fleet.app.store.get_run(run_id)
        assert run is not None and run.status == "running", run
        assert fleet.app.store.list_steps(run_id) == []
        assert _outbox_rows(fleet, run_id) == ["llm:turn:0"]  # the dispatch waits in the outbox
        messages = fleet.app.store.list_messages(run.thread_id)
        assert [(m.role, m.content) for m in messages] == [("user", "go")]

        broker.resume()  # the broker is back, empty: nothing of the start reached it
        fleet.start_worker(concurrency=2, loglevel="INFO")
        fleet.start_beat()  # its sweep tick drains the outbox
        run = fleet.wait_run(run_id, timeout=90)

        assert run.status == "completed", fleet.explain(run_id)
        assert _outbox_rows(fleet, run_id) == []
        steps = fleet.app.store.list_steps(run_id)
        assert len(steps) == 8 and all(s.attempt == 1 and s.status == "completed" for s in steps), steps
        assert set(fleet.executions().values()) == {1} and len(fleet.executions()) == 5
        assert set(fleet.applied().values()) == {1}
        assert len(fleet.app.store.list_runs(thread_id=run.thread_id)) == 1
        assert_clean_transcript(fleet.app.store.list_messages(run.thread_id), tool_messages=5,
                                assistant_messages=3)
        # The workers said which agents they serve (UnknownAgentError is for the others).
        assert {"fanout", "crashy", "lossy", "poison"} <= set(fleet.app.store.declared_agents(0))
        print(f"\nbroker down at start: run() returned its handle in {took:.1f} s; the run completed "
              "once the broker was back")
    finally:
        if broker.proc.poll() is not None:
            broker.resume()  # close() removes the fleet's queue from the broker
        fleet.close()
        broker.stop()
