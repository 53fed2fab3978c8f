"""What the engine benchmark's worker loads: the raw-Celery floor task and the benchmark agent.

The worker runs ``celery -A _common worker`` (with ``bench/`` on ``PYTHONPATH``): ``app`` is the very
same Celery app and config as ``celery -A workers`` (acks_late, prefetch 1, ...) plus one extra task,
``bench.hop``, so the floor and the engine cross the same broker under the same settings. A hop
sent with ``writes=n`` first commits n rows to ``bench_hops`` on ``LUNORA_DATABASE_URL``, one round
trip and one durable commit each (``n = 1``: the least a step can cost in any system that crosses
the broker and records every step, ``bench/peers.py``'s "durable floor"), with ``notices=m`` makes m
more Redis round trips (a PUBLISH each) and with ``reads=r`` r PostgreSQL reads (a primary-key
SELECT in autocommit each), so the floor can be given Lunora's round trips one by one; with
``overlap=True`` the last write goes out before the next hop's publish and is awaited after it.
With ``BENCH_STOCK_TRANSPORT`` set, the app keeps kombu's stock Redis transport and its ack emulation
(the floor's workers in ``bench/peers.py``). ``lunora_app`` (for ``LUNORA_APP=_common:lunora_app``)
is a ``Lunora`` app with one agent whose scripted model calls a no-op tool on every turn but the last.

Environment (set by ``bench/engine.py``): ``BENCH_REDIS_URL`` (where the last hop writes its finish
time), ``BENCH_TURNS`` (turns per run, default 10), ``BENCH_ENGINE_OPTIONS`` (JSON SQLAlchemy engine
options for an ablation), plus the usual ``LUNORA_*`` / ``CELERY_BROKER_URL``.
"""

from __future__ import annotations

import json
import os
import select
import time
import uuid
from functools import cache
from typing import Any

import redis

from workers.celery_app import app, redelivery_options

STOCK_VISIBILITY_TIMEOUT_S = 3600
"""kombu's default visibility timeout on Redis: the floor's workers run with it, as Celery's users do."""

if os.environ.get("BENCH_STOCK_TRANSPORT"):
    # The raw-Celery floor runs on kombu's own Redis transport with its ack emulation (Celery's
    # default: an unacked copy of each delivered message, redelivered after an hour), as a Celery
    # user's would: Lunora's transport and its ack emulation off (make_app, redelivery_options) are
    # part of what the engine is measured on.
    app.conf.broker_transport = None
    app.conf.broker_transport_options = redelivery_options(STOCK_VISIBILITY_TIMEOUT_S)

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
    remaining: int, done_key: str, queue: str | None = None, writes: int = 0, notices: int = 0,
    reads: int = 0, overlap: bool = False,
) -> None:
    """Enqueue one hop the way ``CeleryDispatcher`` enqueues a step (``send_task``, no result), on
    ``queue`` (default: this process's ``LUNORA_QUEUE``; a worker sends the next hop to its own)."""
    app.send_task(
        HOP_TASK, args=(remaining, done_key, writes, notices, reads, overlap), task_id=uuid.uuid4().hex,
        queue=queue or app.conf.task_default_queue, ignore_result=True,
    )


def _hop(
    task: Any, remaining: int, done_key: str, writes: int = 0, notices: int = 0, reads: int = 0,
    overlap: bool = False,
) -> None:
    """A no-op step: make ``reads`` PostgreSQL reads, commit ``writes`` rows (keyed by the task id, as
    a ledger keys a step) and make ``notices`` Redis round trips, then enqueue the next hop, or record
    the finish time after the last one. ``overlap``: the last write is sent before the next hop is
    enqueued and its commit awaited after (libpq sends it with its Sync at once), so its round trip
    and WAL flush run while the publish does."""
    db = _hops_db() if reads or writes else None
    for _ in range(reads):
        db.execute("SELECT created_at FROM bench_hops WHERE id = %s", (task.request.id,)).fetchall()
    under = 1 if overlap and writes > 0 and remaining > 1 else 0
    for i in range(writes - under):
        db.execute(_HOP_INSERT, (f"{task.request.id}:{i}", time.time()))
    if under:
        # libpq's own send: the statement and its Sync go out at once, so the server runs and commits
        # it while this process publishes (psycopg's pipeline would hold the Sync until its exit).
        pg = db.pgconn
        row = [f"{task.request.id}:{writes - 1}".encode(), repr(time.time()).encode()]
        pg.send_query_params(_HOP_INSERT_PQ, row)
        while pg.flush():
            select.select([], [pg.socket], [])
        _notify_and_send(remaining, done_key, writes, notices, reads, overlap)
        _await_commit(pg)
        return
    _notify_and_send(remaining, done_key, writes, notices, reads, overlap)


_HOP_INSERT = "INSERT INTO bench_hops (id, created_at) VALUES (%s, %s)"
_HOP_INSERT_PQ = b"INSERT INTO bench_hops (id, created_at) VALUES ($1, $2::double precision)"


def _await_commit(pg: Any) -> None:
    """Wait for the statement ``pg`` sent and raise if it failed."""
    from psycopg import pq

    while True:
        while pg.is_busy():
            select.select([pg.socket], [], [])
            pg.consume_input()
        result = pg.get_result()
        if result is None:
            return
        if result.status != pq.ExecStatus.COMMAND_OK:
            raise RuntimeError(f"overlapped write failed: {pg.error_message.decode(errors='replace')}")


def _notify_and_send(
    remaining: int, done_key: str, writes: int, notices: int, reads: int, overlap: bool
) -> None:
    for _ in range(notices):
        _redis().publish(done_key, b"")
    if remaining > 1:
        send_hop(remaining - 1, done_key, writes=writes, notices=notices, reads=reads, overlap=overlap)
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
