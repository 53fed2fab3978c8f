"""Messages lost in the broker (FLUSHDB of its Redis db) delay a run; the sweep recovers it.

The broker is a db of the test's private ``redis-server`` (``private_redis``), so the flush wipes
nobody else's data.
"""

from __future__ import annotations

import time

import pytest
from fleet_support import Fleet, assert_clean_transcript
from private_redis import PrivateRedis, flush_owned

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_lost_start_message_is_recovered_by_the_beat_driven_sweep(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = Fleet(pg_url, private_redis, monkeypatch)
    try:
        run_id = fleet.start_run("fanout")  # no worker yet: the first turn waits in the broker
        assert fleet.broker.llen(fleet.queue) == 1, (fleet.broker.keys("*"), fleet.explain(run_id))
        flush_owned(fleet.broker)  # ... and is lost
        fleet.start_worker(concurrency=2, loglevel="INFO")  # INFO: the log shows each sweep tick
        time.sleep(1.0)  # give a (wrongly) surviving message every chance to show up
        assert fleet.app.store.list_steps(run_id) == []  # nothing ran: the message is really gone

        fleet.start_beat()  # `lunora beat`: its sweep tick finds the stalled run
        run = fleet.wait_run(run_id, timeout=60)

        assert run.status == "completed", (run, fleet.logs())
        steps = fleet.app.store.list_steps(run_id)
        assert len(steps) == 8 and all(s.attempt == 1 for s in steps)
        assert set(fleet.executions().values()) == {1}
        messages = fleet.app.store.list_messages(run.thread_id)
        assert_clean_transcript(messages, tool_messages=5, assistant_messages=3)
    finally:
        fleet.close()


def test_flush_mid_run_loses_queued_tool_calls_and_the_sweep_recovers_them(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = Fleet(pg_url, private_redis, monkeypatch)
    try:
        fleet.start_worker(concurrency=1)  # one process: while l1 blocks, l2 and l3 wait in Redis
        run_id = fleet.start_run("lossy")
        assert fleet.wait_entered(1) == ["tool:block:l1"]
        assert fleet.broker.llen(fleet.queue) == 2
        flush_owned(fleet.broker)  # l2 and l3 are lost (l1 has no broker copy)
        fleet.release()

        with fleet.sweeping(every=0.5) as tick:
            run = fleet.wait_run(run_id, timeout=60, tick=tick)

        assert run.status == "completed", (run, fleet.logs())
        steps = {s.name: s for s in fleet.app.store.list_steps(run_id)}
        assert set(steps) == {
            "llm:turn:0", "llm:turn:1", "llm:turn:2",
            "tool:block:l1", "tool:record:l2", "tool:record:l3", "tool:record:l4",
        }
        assert all(s.status == "completed" and s.attempt == 1 for s in steps.values()), steps
        assert set(fleet.executions().values()) == {1}
        assert set(fleet.applied().values()) == {1}
        messages = fleet.app.store.list_messages(run.thread_id)
        assert_clean_transcript(messages, tool_messages=4, assistant_messages=3)
    finally:
        fleet.close()
