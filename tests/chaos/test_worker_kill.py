"""SIGKILL a worker in the middle of a tool step; a new worker finishes the run exactly once.

On the prefork pool the whole worker or only the pool process running the step; on the solo pool
(each process runs its steps itself) the worker process.
"""

from __future__ import annotations

import os
import signal

import pytest
from fleet_support import Fleet, assert_clean_transcript
from private_redis import PrivateRedis

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BEFORE_KILL = ["llm:turn:0", "tool:record:c1", "tool:record:c2", "llm:turn:1"]
KILLED = "tool:block:c3"
AFTER_KILL = ["tool:record:c4", "llm:turn:2", "llm:turn:3"]


@pytest.mark.parametrize("victim", ["worker", "pool-process", "solo-worker"])
def test_sigkill_mid_tool_then_new_worker_finishes_each_step_once(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch, victim: str
) -> None:
    fleet = Fleet(pg_url, private_redis, monkeypatch)
    pool = "solo" if victim == "solo-worker" else "prefork"
    try:
        first = fleet.start_worker(concurrency=2, pool=pool)
        run_id = fleet.start_run("crashy")
        assert fleet.wait_entered(1) == [KILLED]  # the block tool applied its effect and now waits
        done = {s.name for s in fleet.app.store.list_steps(run_id) if s.status == "completed"}
        assert done == set(BEFORE_KILL)

        if victim in ("worker", "solo-worker"):
            first.kill()  # the whole process group: a lost machine, nothing acked or requeued
            fleet.release()  # the re-executed block tool may proceed
            fleet.start_worker(concurrency=2, pool=pool)
        else:
            # Only the pool process running the step (an OOM kill): the worker survives, replaces
            # the process and, with task_reject_on_worker_lost, puts the message back on the queue.
            pid = fleet.pid_of(KILLED)
            assert pid in first.pool_pids()
            os.kill(pid, signal.SIGKILL)
            fleet.release()

        with fleet.sweeping(every=0.5) as tick:
            run = fleet.wait_run(run_id, timeout=90, tick=tick)

        assert run.status == "completed", fleet.explain(run_id)
        assert run.stopped == "final"
        steps = {s.name: s for s in fleet.app.store.list_steps(run_id)}
        assert set(steps) == {*BEFORE_KILL, KILLED, *AFTER_KILL}
        assert all(s.status == "completed" for s in steps.values()), steps
        # Completed steps ran once; the killed step was claimed again (the attempt survives the crash).
        assert {n: s.attempt for n, s in steps.items()} == {**dict.fromkeys(steps, 1), KILLED: 2}
        executions = fleet.executions()
        assert executions == {"tool:record:c1": 1, "tool:record:c2": 1, KILLED: 2, "tool:record:c4": 1}
        # The killed step ran twice, but its side effect, deduped on ctx.idempotency_key, applied once.
        assert fleet.applied() == dict.fromkeys(executions, 1)
        messages = fleet.app.store.list_messages(run.thread_id)
        assert_clean_transcript(messages, tool_messages=4, assistant_messages=4)
        assert messages[-1].role == "assistant" and messages[-1].content == "survived"
    finally:
        fleet.close()
