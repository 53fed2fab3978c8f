"""Recovery time after a SIGKILL, with default settings: stranded steps move again within 15 s.

A killed worker's in-flight step used to keep its lease for ``step_timeout_s`` + grace (330 s by
default), and nothing noticed the worker was dead. Now a claim's lease is short (``LUNORA_LEASE_S``,
6 s) and renewed by the worker while the step runs (``engine/leases.py``), and the sweep dispatches a
lapsed lease at once (no grace), so a dead worker's step is taken over within one lease plus one
sweep tick.

Four runs of the ``recover`` agent (default ``step_timeout_s``: 300 s) each block in their ``gate``
tool, one per pool process of two workers. Then one whole worker group is SIGKILLed (a lost machine:
the messages it held are lost with it) and one pool process of the other (an OOM kill: the
message is requeued, and its redelivery meets the dead attempt's lease and is dropped as ``busy``).
The gates open, a replacement worker starts, and the sweep ticks at beat's default interval (5 s)
with the engine's default grace (30 s). Bound: every run's gate step is completed within 15 s of the
kills; afterwards every run completes with exactly-once effects and no duplicated message.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from chaos_support import assert_exactly_once, chaos_fleet, start_run, through_outage, wait_runs
from private_redis import PrivateRedis

from lunora_jobs.config import Settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GATE = "tool:gate:g1"
STEPS = {"llm:turn:0", GATE, "tool:note:a1", "llm:turn:1"}
RECOVERY_BOUND_S = 15.0
RUNS = 4


def test_steps_of_killed_workers_move_again_within_15_s_with_default_settings(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = chaos_fleet(pg_url, private_redis, monkeypatch)
    fleet.env.pop("LUNORA_LEASE_S")  # the default lease (the fleet scales it down to 2 s)
    monkeypatch.delenv("LUNORA_LEASE_S")
    defaults = Settings.model_construct()
    fleet.sweep_grace_ms = 30_000  # the engine's default grace, not the fleet's scaled-down one
    try:
        doomed = fleet.start_worker(concurrency=2)
        survivor = fleet.start_worker(concurrency=2)
        runs = [start_run(fleet, "recover") for _ in range(RUNS)]
        run_ids = [run_id for run_id, _ in runs]
        fleet.wait_entered(RUNS, timeout=60)  # every pool process now sits in a gate
        lease = through_outage(lambda: fleet.app.store.get_step(run_ids[0], GATE))
        assert lease is not None and lease.lease_expires_at - lease.updated_at <= defaults.lease_s * 1000

        victim = survivor.pool_pids()[0]
        doomed.kill()
        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        fleet.counters.set(f"{fleet.prefix}:open:{GATE}", "1")
        # A replacement machine boots meanwhile (seconds on a busy host); the surviving worker, whose
        # lost pool process was replaced at once, may well take the stranded steps over first.
        replacement = threading.Thread(target=fleet.start_worker, kwargs={"concurrency": 2})
        replacement.start()

        moved: dict[str, float] = {}
        with fleet.sweeping(every=defaults.sweep_interval) as tick:
            while len(moved) < RUNS and time.monotonic() - killed_at < RECOVERY_BOUND_S + 30:
                tick()
                for run_id in run_ids:
                    row = fleet.app.store.get_step(run_id, GATE)
                    if run_id not in moved and row is not None and row.status == "completed":
                        moved[run_id] = time.monotonic() - killed_at
                time.sleep(0.1)
            slowest = max(moved.values(), default=float("inf"))
            summary = (f"kill recovery: runs={RUNS} stranded={sum(t > 1 for t in moved.values())} "
                       f"moved again after {sorted(round(t, 1) for t in moved.values())} s "
                       f"(bound {RECOVERY_BOUND_S} s, lease {defaults.lease_s} s, "
                       f"sweep every {defaults.sweep_interval} s)")
            print(f"\n{summary}")
            assert len(moved) == RUNS and slowest <= RECOVERY_BOUND_S, f"{summary}\n{fleet.logs()}"
            wait_runs(fleet, run_ids, timeout=60, tick=tick)
        replacement.join(timeout=60)

        for run_id, tag in runs:
            steps = assert_exactly_once(fleet, run_id, tag, expected_steps=STEPS, turns=2, tool_messages=2,
                                        final_text="recovered", context=summary)
            assert all(s.attempt == 1 for n, s in steps.items() if n != GATE), fleet.explain(run_id)
        # Three gates were killed mid-step and claimed again; the fourth finished where it was.
        retaken = [fleet.app.store.get_step(r, GATE) for r in run_ids]
        assert sorted(s.attempt for s in retaken if s is not None) == [1, 2, 2, 2], summary
    finally:
        fleet.close()
