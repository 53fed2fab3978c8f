"""Test-side helpers of the chaos suites: a ``Fleet`` running ``chaos_app``, outage-tolerant polling,
and the exactly-once invariants every chaos run must satisfy.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy.exc
from fleet_support import TERMINAL, Fleet, assert_clean_transcript
from private_redis import PrivateRedis

HERE = Path(__file__).resolve().parent
T = TypeVar("T")
# What a store call raises while the database restarts (psycopg errors arrive wrapped in these).
OUTAGE = (sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError)


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
