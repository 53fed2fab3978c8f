"""A bounded soak: runs with parallel tool calls while a seeded chaos loop SIGKILLs worker processes.

Two workers (two pool processes each) work through ``RUNS`` runs of the ``soak`` agent (four turns
of three parallel ``slow`` calls, then a final answer). Every ``0.4``-``1.6`` s the chaos loop picks,
with ``random.Random(SEED)``, either one pool process (an OOM kill: the worker replaces it and, with
``task_reject_on_worker_lost``, requeues its message) or a whole worker process group (a lost
machine: the messages it held are lost with it) and SIGKILLs it, starting a replacement worker
for a lost one. The loop stops by itself once every run is finished, after ``MAX_KILLS`` kills or
after ``CHAOS_S`` seconds; the sweep then recovers whatever the kills stranded.

Every run must then satisfy the invariants of ``chaos_support.assert_exactly_once``: completed, no
finished step re-run, each effect applied once, no duplicated message. ``LUNORA_CHAOS_SEED``
replays another sequence of choices (the seed is named in every failure message).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from typing import Any

import pytest
from chaos_app import SOAK_CALLS, SOAK_TURNS
from chaos_support import (
    all_finished,
    assert_exactly_once,
    chaos_fleet,
    chaos_seed,
    kill_one,
    live_workers,
    start_run,
    wait_runs,
)
from private_redis import PrivateRedis

from lunora_jobs.engine.keys import run_lock_key
from lunora_jobs.engine.locks import SWEEP_LOCK_ID, RedisLock
from lunora_jobs.engine.sweep import SWEEP_LOCK_MIN_TTL_MS
from lunora_jobs.runtime import Lunora
from lunora_jobs.store import create_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEED = chaos_seed(20261130)
RUNS = 10
WORKERS = 2
CHAOS_S = 45.0
MAX_KILLS = 24
TOOL_STEPS = {f"tool:slow:s{t}{c}" for t in range(SOAK_TURNS) for c in range(SOAK_CALLS)}
STEPS = {*(f"llm:turn:{t}" for t in range(SOAK_TURNS + 1)), *TOOL_STEPS}


def test_random_sigkills_lose_no_run_and_repeat_no_finished_step(
    pg_url: str, private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = chaos_fleet(pg_url, private_redis, monkeypatch)
    rng = random.Random(SEED)
    kills: list[dict[str, Any]] = []
    try:
        for _ in range(WORKERS):
            fleet.start_worker(concurrency=2)
        started = time.monotonic()
        runs = [start_run(fleet, "soak") for _ in range(RUNS)]
        run_ids = [run_id for run_id, _ in runs]

        with fleet.sweeping(every=0.5) as tick:
            next_kill = time.monotonic() + rng.uniform(0.4, 1.6)
            stop_at = time.monotonic() + CHAOS_S
            while len(kills) < MAX_KILLS and time.monotonic() < stop_at and not all_finished(fleet, run_ids):
                tick()
                if time.monotonic() >= next_kill:
                    kills.append(kill_one(fleet, rng, started))
                    next_kill = time.monotonic() + rng.uniform(0.4, 1.6)
                time.sleep(0.05)
            chaos_s = time.monotonic() - started
            context = f"seed={SEED} (LUNORA_CHAOS_SEED replays it) kills={kills}"
            assert live_workers(fleet), context
            finished = wait_runs(fleet, run_ids, timeout=90, tick=tick)

        assert all(run.status == "completed" for run in finished.values()), (
            context, {r: (run.status, run.error) for r, run in finished.items()})
        attempts = 0
        for run_id, tag in runs:
            steps = assert_exactly_once(
                fleet, run_id, tag, expected_steps=STEPS, turns=SOAK_TURNS + 1,
                tool_messages=len(TOOL_STEPS), final_text="soaked", context=context,
            )
            attempts += sum(s.attempt for s in steps.values())
        assert len(kills) >= 3, f"the chaos loop barely ran: {context}"
        # Some kill landed mid-step (a step claimed again): the soak exercised recovery, not just luck.
        assert attempts > RUNS * len(STEPS), f"no kill hit a running step: {context}"
        total_s = time.monotonic() - started
        print(f"\nchaos soak: seed={SEED} runs={RUNS} kills={len(kills)} "
              f"({sum(k['victim'] == 'worker' for k in kills)} whole workers) "
              f"extra claims={attempts - RUNS * len(STEPS)} chaos={chaos_s:.1f}s total={total_s:.1f}s")
    finally:
        fleet.close()


class _StallingStore:
    """The real store, except that a sweep's scan hangs (after saying so) until the process is killed."""

    def __init__(self, inner: Any, scanning: Any) -> None:
        self.inner = inner
        self.scanning = scanning

    def lapsed_steps(self, *args: Any, **kwargs: Any) -> Any:
        self.scanning.set()
        time.sleep(60)
        return self.inner.lapsed_steps(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _sweep_forever(pg_url: str, redis_url: str, prefix: str, scanning: Any, grace_ms: int) -> None:
    store = _StallingStore(create_store(pg_url), scanning)
    app = Lunora(store=store, lock=RedisLock.from_url(redis_url, prefix=prefix))
    app.sweep(grace_ms=grace_ms)


# 30 s is the engine's default grace: the lock of a dead sweeper must not last that long (the chaos
# run saw lapsed leases of a killed worker wait for it).
@pytest.mark.parametrize("grace_ms", [1000, 30_000])
def test_a_sweeper_killed_mid_pass_blocks_the_sweep_for_a_few_seconds_at_most(
    pg_url: str, redis_url: str, redis_prefix: str, grace_ms: int
) -> None:
    # Found by the soak above: the sweep lock outlived a SIGKILLed sweeper by 120 s, and every tick
    # in between skipped, so runs stranded by the same crash waited two minutes for the recovery path.
    context = multiprocessing.get_context("fork")
    scanning = context.Event()
    sweeper = context.Process(target=_sweep_forever,
                              args=(pg_url, redis_url, redis_prefix, scanning, grace_ms))
    sweeper.start()
    lock = RedisLock.from_url(redis_url, prefix=redis_prefix)
    app = Lunora(store=create_store(pg_url), lock=lock)
    try:
        assert scanning.wait(timeout=30), "the sweeper never started its pass"
        os.kill(sweeper.pid or 0, signal.SIGKILL)  # mid-pass, holding the sweep lock
        sweeper.join(timeout=10)
        killed_at = time.monotonic()
        held = list(lock.client.scan_iter(match=run_lock_key(redis_prefix, SWEEP_LOCK_ID) + "*"))
        assert len(held) == 1, held  # the dead sweeper's lock (its id may be scoped to the database)
        left_ms = lock.client.pttl(held[0])
        assert 0 < left_ms <= SWEEP_LOCK_MIN_TTL_MS, left_ms
        assert app.sweep(grace_ms=grace_ms).skipped  # the dead holder's lock still stands ...
        while app.sweep(grace_ms=grace_ms).skipped:  # ... for SWEEP_LOCK_MIN_TTL_MS, whatever the grace
            assert time.monotonic() - killed_at < SWEEP_LOCK_MIN_TTL_MS / 1000 + 2, "sweep still blocked"
            time.sleep(0.1)
    finally:
        if sweeper.is_alive():
            sweeper.kill()
            sweeper.join(timeout=10)
        for key in lock.client.scan_iter(match=run_lock_key(redis_prefix, SWEEP_LOCK_ID) + "*"):
            lock.client.delete(key)
        app.close()
