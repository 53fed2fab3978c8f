"""Test-side helpers of the chaos suites: a ``Fleet`` running ``chaos_app``, outage-tolerant polling,
and the exactly-once invariants every chaos run must satisfy.
"""

from __future__ import annotations

import os
import random
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa
import sqlalchemy.exc
from fleet_support import TERMINAL, Fleet, assert_clean_transcript
from private_redis import PrivateRedis

from workers.testing import BeatProcess, WorkerProcess

HERE = Path(__file__).resolve().parent
T = TypeVar("T")
# What a store call raises while the database restarts (psycopg errors arrive wrapped in these).
OUTAGE = (sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError)


def chaos_seed(default: int) -> int:
    """The seed of a chaos run's random choices: ``LUNORA_CHAOS_SEED`` replays another sequence (a
    test-only knob, named in every failure message), else the test's own ``default``."""
    return int(os.environ.get("LUNORA_CHAOS_SEED", str(default)))


def chaos_fleet(database_url: str, redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch) -> Fleet:
    """A ``Fleet`` whose workers and test-side app load ``chaos_app:build_app``, not ``fleet_app``'s."""
    fleet = Fleet(database_url, redis, monkeypatch)
    fleet.env["LUNORA_APP"] = "chaos_app:build_app"
    fleet.env["PYTHONPATH"] = f"{HERE}:{fleet.env['PYTHONPATH']}"
    monkeypatch.setenv("LUNORA_APP", "chaos_app:build_app")
    monkeypatch.setenv("PYTHONPATH", fleet.env["PYTHONPATH"])
    monkeypatch.syspath_prepend(str(HERE))
    import chaos_app

    fleet.app.store.engine.dispose()  # the fleet_app app it built first is not used again
    fleet.app = chaos_app.build_app()
    return fleet


def start_run(fleet: Fleet, agent: str) -> tuple[str, str]:
    """Start a run on a fresh thread with a unique input (the model counts calls under it)."""
    tag = f"{agent}-{uuid.uuid4().hex[:8]}"
    handle = getattr(fleet.app.agents, agent).run(input=tag, thread_key=f"{fleet.prefix}-{tag}")
    return str(handle.id), tag


def through_outage(call: Callable[[], T], timeout: float = 60.0) -> T:
    """``call()``, retried while the database is down or restarting (bounded by ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except OUTAGE:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def wait_runs(
    fleet: Fleet, run_ids: list[str], timeout: float, tick: Callable[[], None] | None = None,
    on_poll: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Poll until every run is terminal (tolerating database outages); return run id -> record."""
    deadline = time.monotonic() + timeout
    while True:
        runs = through_outage(lambda: {r: fleet.app.store.get_run(r) for r in run_ids})
        if all(run is not None and run.status in TERMINAL for run in runs.values()):
            return runs
        if time.monotonic() > deadline:
            pending = {r: (run.status if run else None) for r, run in runs.items()
                       if run is None or run.status not in TERMINAL}
            stuck = next(iter(pending))
            raise AssertionError(f"runs not finished after {timeout}s: {pending}\n{fleet.explain(stuck)}")
        if tick is not None:
            tick()
        if on_poll is not None:
            on_poll()
        time.sleep(0.1)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` until true; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def all_finished(fleet: Fleet, run_ids: list[str]) -> bool:
    """Whether every run is terminal (tolerating a database outage)."""
    runs = through_outage(lambda: [fleet.app.store.get_run(r) for r in run_ids])
    return all(run is not None and run.status in TERMINAL for run in runs)


def live_workers(fleet: Fleet) -> list[WorkerProcess]:
    """The fleet's workers (not beat) that run and consume (a replacement still booting is not one)."""
    return [w for w in fleet.workers if not isinstance(w, BeatProcess) and w.proc is not None
            and w.proc.poll() is None and w.ready_file.exists()]


def kill_one(
    fleet: Fleet, rng: random.Random, started: float, replace: Callable[[], Any] | None = None
) -> dict[str, Any]:
    """SIGKILL one randomly chosen pool process (an OOM kill: the worker replaces it and requeues its
    message) or worker group (a lost machine: the messages it held are lost with it), and start a
    replacement for a lost worker (``replace``, default: a 2-process worker, started before this
    returns). The last worker that consumes is never lost whole. ``pids``: every process killed (a
    worker's own and its pool's)."""
    live = live_workers(fleet)
    worker = rng.choice(live)
    victim = rng.choice(["pool-process", "worker"])
    if len(live) < 2:  # the last consuming worker (others still booting): lose a process, not the machine
        victim = "pool-process"
    children = worker.pool_pids()
    at = round(time.monotonic() - started, 2)
    if victim == "pool-process" and children:
        pid = rng.choice(children)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:  # it exited (the worker recycles it) between listing and kill
            return {"at": at, "victim": "pool-process", "pid": pid, "pids": [], "missed": True}
        return {"at": at, "victim": "pool-process", "pid": pid, "pids": [pid]}
    worker.kill()
    (replace or (lambda: fleet.start_worker(concurrency=2)))()
    return {"at": at, "victim": "worker", "pid": worker.pid, "pids": [worker.pid, *children]}


def leased_by(fleet: Fleet, pids: list[int]) -> dict[tuple[str, str], tuple[int, int]]:
    """(run id, step) -> (attempt, lease expiry in epoch ms) of every running step whose lease a
    process of ``pids`` holds (the lease owner is ``host:pid:random``): what a kill of those
    processes strands."""
    if not pids:
        return {}
    steps = sa.table("agent_steps", sa.column("run_id"), sa.column("name"), sa.column("status"),
                     sa.column("attempt"), sa.column("lease_owner"), sa.column("lease_expires_at"))
    owned = sa.or_(*(steps.c.lease_owner.like(f"%:{pid}:%") for pid in pids))
    query = sa.select(steps.c.run_id, steps.c.name, steps.c.attempt, steps.c.lease_expires_at).where(
        steps.c.status == "running", owned)

    def read() -> dict[tuple[str, str], tuple[int, int]]:
        with fleet.app.store.engine.connect() as conn:
            rows = conn.execute(query)
            return {(row.run_id, row.name): (row.attempt, row.lease_expires_at) for row in rows}

    return through_outage(read)


def _of_run(counts: dict[str, int], run_id: str) -> dict[str, int]:
    return {key.split(":", 1)[1]: n for key, n in counts.items() if key.startswith(f"{run_id}:")}


def executions(fleet: Fleet, run_id: str) -> dict[str, int]:
    """Step name -> executions of a ``chaos_app`` tool in run ``run_id`` (every attempt, even killed ones)."""
    return _of_run(fleet.executions(), run_id)


def applied(fleet: Fleet, run_id: str) -> dict[str, int]:
    """Step name -> times the tool's side effect was applied in run ``run_id`` (must be 1 each)."""
    return _of_run(fleet.applied(), run_id)


def llm_calls(fleet: Fleet) -> dict[str, int]:
    """``<run input>:<turn>`` -> model calls (every attempt)."""
    return {str(k): int(v) for k, v in fleet.counters.hgetall(f"{fleet.prefix}:llm").items()}


def assert_exactly_once(
    fleet: Fleet, run_id: str, tag: str, *, expected_steps: set[str], turns: int, tool_messages: int,
    final_text: str, context: str = "",
) -> dict[str, Any]:
    """The chaos invariants for one finished run; returns step name -> ledger row.

    - the run completed normally and its ledger holds exactly the expected steps, all completed;
    - no finished step re-ran: every execution of a tool and every model call came from its own
      claim (executions <= ledger attempt), and each ran at least once;
    - every effect was applied exactly once (the tools dedupe on ``ctx.idempotency_key``);
    - no duplicated message: unique keys, ``seq`` strictly increasing, expected count per role.
    """
    why = f"{context}\n{fleet.explain(run_id)}"
    run = fleet.app.store.get_run(run_id)
    assert run is not None and run.status == "completed" and run.stopped == "final", why
    steps = {s.name: s for s in fleet.app.store.list_steps(run_id)}
    assert set(steps) == expected_steps, why
    assert all(s.status == "completed" for s in steps.values()), why
    ran, effects = executions(fleet, run_id), applied(fleet, run_id)
    tools = {name for name in steps if name.startswith("tool:")}
    assert set(ran) == tools and effects == dict.fromkeys(tools, 1), why
    for name in tools:
        assert ran[name] <= steps[name].attempt, (name, steps[name].attempt, why)
    calls = llm_calls(fleet)
    for turn in range(turns):
        step = steps[f"llm:turn:{turn}"]
        assert 1 <= calls.get(f"{tag}:{turn}", 0) <= step.attempt, (turn, step.attempt, calls, why)
    messages = fleet.app.store.list_messages(run.thread_id)
    assert_clean_transcript(messages, tool_messages=tool_messages, assistant_messages=turns)
    assert messages[-1].role == "assistant" and messages[-1].content == final_text, why
    return steps
