"""``LUNORA_VISIBILITY_TIMEOUT`` on a real Redis broker: 0 (the default) keeps no broker copy of a
delivered message, N > 0 turns kombu's ack emulation (an ``unacked`` copy, redelivered after N s) on.

Each test runs a fleet on its own ``redis-server`` (``private_redis``), so Celery's db-wide
``unacked`` hash holds this test's messages only.
"""

from __future__ import annotations

import os
import re
import signal
import time

import pytest
from fleet_support import Fleet, assert_clean_transcript
from private_redis import PrivateRedis

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _unacked(fleet: Fleet) -> tuple[int, int]:
    return int(fleet.broker.hlen("unacked")), int(fleet.broker.zcard("unacked_index"))


@pytest.mark.parametrize("visibility_timeout", [None, "600"], ids=["default", "600s"])
def test_a_running_step_leaves_a_broker_copy_only_with_a_visibility_timeout(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch, visibility_timeout: str | None
) -> None:
    fleet = Fleet(pg_url, private_redis, monkeypatch)
    if visibility_timeout is not None:
        fleet.env["LUNORA_VISIBILITY_TIMEOUT"] = visibility_timeout
    try:
        fleet.start_worker(concurrency=1)
        run_id = fleet.start_run("lossy")
        assert fleet.wait_entered(1) == ["tool:block:l1"]  # l1 runs (delivered, not acked yet)

        if visibility_timeout is None:
            assert _unacked(fleet) == (0, 0)
        else:
            assert _unacked(fleet) == (1, 1)
            assert f"{run_id}:tool:block:l1".encode() in next(iter(fleet.broker.hvals("unacked")))
        fleet.release()
        run = fleet.wait_run(run_id)

        assert run.status == "completed", fleet.explain(run_id)
        # The last task is acked just after it committed the run's end: its copy (if any) goes then.
        deadline = time.monotonic() + 15.0
        while _unacked(fleet) != (0, 0):
            assert time.monotonic() < deadline, (_unacked(fleet), fleet.logs())
            time.sleep(0.05)
        assert set(fleet.executions().values()) == {1}
    finally:
        fleet.close()


def test_without_a_broker_copy_a_killed_pool_process_still_has_its_message_requeued(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default (no ``unacked`` copy): an OOM-killed pool process's message goes back to the queue
    at once (``task_reject_on_worker_lost``), and the run completes with every effect applied once."""
    fleet = Fleet(pg_url, private_redis, monkeypatch)
    try:
        worker = fleet.start_worker(concurrency=1, loglevel="INFO")  # INFO: the log shows each receipt
        run_id = fleet.start_run("lossy")
        assert fleet.wait_entered(1) == ["tool:block:l1"]
        assert _unacked(fleet) == (0, 0)
        os.kill(fleet.pid_of("tool:block:l1"), signal.SIGKILL)

        received = re.compile(rf"Task lunora\.tool\[{run_id}:tool:block:l1\] received")
        deadline = time.monotonic() + 15.0
        while len(received.findall(worker.log())) < 2:  # delivered again, with no sweep running
            assert time.monotonic() < deadline, worker.log()[-4000:]
            time.sleep(0.05)
        fleet.release()
        with fleet.sweeping(every=0.5) as tick:  # the killed attempt's live lease: taken over once it lapses
            run = fleet.wait_run(run_id, timeout=60, tick=tick)

        assert run.status == "completed", fleet.explain(run_id)
        assert set(fleet.applied().values()) == {1}
        messages = fleet.app.store.list_messages(run.thread_id)
        assert_clean_transcript(messages, tool_messages=4, assistant_messages=3)
    finally:
        fleet.close()
