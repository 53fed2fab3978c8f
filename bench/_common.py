"""What the engine benchmark's worker loads: the raw-Celery floor task and the benchmark agent.

The worker runs ``celery -A _common worker`` (with ``bench/`` on ``PYTHONPATH``): ``app`` is the very
same Celery app and config as ``celery -A workers`` (acks_late, prefetch 1, ...) plus one extra task,
``bench.hop``, so the floor and the engine cross the same broker under the same settings. A hop
sent with ``writes=n`` first commits n rows to ``bench_hops`` on ``LUNORA_DATABASE_URL``, one round
trip and one durable commit each (``n = 1``: the least a step can cost in any system that crosses
the broker and records every step, ``bench/peers.py``'s "durable floor"), with ``notices=m`` makes m
more Redis round trips (a PUBLISH each) and with ``reads=r`` r PostgreSQL reads (a primary-key
SELECT in autocommit each), so the floor can be given Lunora's round trips one by one.
``lunora_app`` (for ``LUNORA_APP=_common:lunora_app``) is a ``Lunora`` app with one agent whose
scripted model calls a no-op tool on every turn but the last.

Environment (set by ``bench/engine.py``): ``BENCH_REDIS_URL`` (where the last hop writes its finish
time), ``BENCH_TURNS`` (turns per run, default 10), ``BENCH_ENGINE_OPTIONS`` (JSON SQLAlchemy engine
options for an ablation), plus the usual ``LUNORA_*`` / ``CELERY_BROKER_URL``.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from functools import cache
from typing import Any

import redis

from workers.celery_app import app

HOP_TASK = "bench.hop"
AGENT_NAME = "bench"
HOPS_TABLE_DDL = "CREATE TABLE IF NOT EXISTS bench_hops (id text PRIMARY KEY, created_at double precision)"
"""The durable floor's ledger: one row per hop (created by the driver before the workers start)."""


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(os.environ["BENCH_REDIS_URL"])


@cache
def _hops_db() -> Any:
    import psycopg

    # Autocommit: each INSERT is its own transaction, committed durably (synchronous_commit on).
    url = os.environ["LUNORA_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://")
    return psycopg.connect(url, autocommit=True)


def send_hop(
    remaining: int, done_key: str, queue: str | None = None, writes: int = 0, notices: int = 0, reads: int = 0
) -> None:
    """Enqueue one hop the way ``CeleryDispatcher`` enqueues a step (``send_task``, no result), on
    ``queue`` (default: this process's ``LUNORA_QUEUE``; a worker sends the next hop to its own)."""
    app.send_task(
        HOP_TASK, args=(remaining, done_key, writes, notices, reads), task_id=uuid.uuid4().hex,
        queue=queue or app.conf.task_default_queue, ignore_result=True,
    )


def _hop(task: Any, remaining: int, done_key: str, writes: int = 0, notices: int = 0, reads: int = 0) -> None:
    """A no-op step: make ``reads`` PostgreSQL reads, commit ``writes`` rows (keyed by the task id, as
    a ledger keys a step) and make ``notices`` Redis round trips, then enqueue the next hop, or record
    the finish time after the last one."""
    for _ in range(reads):
        _hops_db().execute("SELECT created_at FROM bench_hops WHERE id = %s", (task.request.id,)).fetchall()
    for i in range(writes):
        _hops_db().execute("INSERT INTO bench_hops (id, created_at) VALUES (%s, %s)",
                           (f"{task.request.id}:{i}", time.time()))
    for _ in range(notices):
        _redis().publish(done_key, b"")
    if remaining > 1:
        send_hop(remaining - 1, done_key, writes=writes, notices=notices, reads=reads)
    else:
        # One round trip; the TTL clears a mark nobody waits for any more (a benchmark that failed).
        marks = _redis().pipeline(transaction=False)
        marks.rpush(done_key, repr(time.time()))
        marks.expire(done_key, 3600)
        marks.execute()


hop = app.task(_hop, name=HOP_TASK, bind=True)


def turns() -> int:
    """Turns per benchmark run (env ``BENCH_TURNS``, default 10): ``turns - 1`` tool calls in between."""
    return int(os.environ.get("BENCH_TURNS", "10"))


def build_agent() -> Any:
    """The benchmark agent: turn ``i < turns-1`` calls the no-op tool ``noop``, the last turn answers."""
    from lunora_jobs.agent import define_agent
    from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn
    from lunora_jobs.tools import define_tool

    noop = define_tool(
        name="noop", description="Does nothing.",
        input_schema={"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]},
        execute=lambda args, ctx: "ok",
    )
    script = [tool_call_turn(f"call_{i}", "noop", {"i": i}) for i in range(turns() - 1)]
    script.append(final_turn("done"))
    return define_agent(
        name=AGENT_NAME, instructions="Benchmark agent.", model=ScriptedModel(script), tools=[noop],
        max_turns=turns() + 1,
    )


def engine_options() -> dict[str, Any]:
    """SQLAlchemy engine options for an ablation (env ``BENCH_ENGINE_OPTIONS``, JSON), e.g.
    ``{"pool_pre_ping": false}``; empty means the store exactly as shipped."""
    return dict(json.loads(os.environ.get("BENCH_ENGINE_OPTIONS") or "{}"))


def build_lunora(**overrides: Any) -> Any:
    """The benchmark's ``Lunora`` app from the environment (plus ``overrides``, e.g. a dispatcher)."""
    from lunora_jobs.runtime import Lunora

    options = engine_options()
    if options:
        from lunora_jobs.store.sql import SqlStore

        overrides.setdefault("store", SqlStore.from_url(os.environ["LUNORA_DATABASE_URL"], **options))
    return Lunora.from_env(agents=[build_agent()], **overrides)


@cache
def _lunora_app() -> Any:
    return build_lunora()


def __getattr__(name: str) -> Any:
    # ``lunora_app`` is built on first access (PEP 562), after the process has its environment.
    if name == "lunora_app":
        return _lunora_app()
    raise AttributeError(name)
