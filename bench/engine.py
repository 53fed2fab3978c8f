"""Benchmark: the durable engine on Celery against a raw Celery chain of the same length.

    python bench/engine.py [--turns 10] [--concurrent 8] [--repeats 5] [--concurrency 2]
    python bench/engine.py --only round-trips            # just the per-step round-trip counts
    python bench/engine.py --engine-options '{"pool_pre_ping": false}'   # a store ablation

It starts its own worker (``celery -A _common worker``: the ``workers`` config plus one no-op task) on
a private queue, a fresh PostgreSQL database and Redis db 15 (broker, run lock, finish marks; only
its own keys are removed afterwards), then measures, alternating raw and engine samples:

1. **raw floor** — a chain of K no-op Celery tasks, each enqueueing the next (acks_late, prefetch 1,
   the same producer path and the same Redis transport the engine uses: ``workers.redis_transport``;
   ``bench/peers.py`` measures the floor on kombu's stock transport), K = the number of engine steps
   of one run;
2. **engine** — one scripted agent run of ``--turns`` turns with a no-op tool call between turns
   (K = 2*turns - 1 steps): every step crosses the broker, claims and completes its ledger row and
   persists its message on PostgreSQL (``LUNORA_REDIS_URL`` is set: the Redis run lock is used
   wherever the engine takes it);
3. both again with ``--concurrent`` chains / runs at once (throughput);
4. round trips per step, counted in-process around ``execute_step`` (``_engine_roundtrips.py``):
   PostgreSQL from libpq's protocol trace, Redis at the redis-py connection, broker publish included.

It prints ms per step, the ratio engine/raw and the per-step overhead (engine - raw). The machine may
be shared: each figure is the median of ``--repeats`` samples, and best/best is printed too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = Path(__file__).resolve().parent
REDIS_DB = 15  # the benchmark's Redis db; each run removes only its own keys, so two runs can overlap
PG_ADMIN = os.environ.get("LUNORA_BENCH_PG_ADMIN", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
REDIS_BASE = os.environ.get("LUNORA_BENCH_REDIS", "redis://127.0.0.1:6379")


def _configure_env(queue: str, database_url: str) -> dict[str, str]:
    """The environment shared by this process and the worker (set before any Celery import)."""
    redis_url = f"{REDIS_BASE}/{REDIS_DB}"
    env = {
        "CELERY_BROKER_URL": redis_url,
        "LUNORA_REDIS_URL": redis_url,
        "BENCH_REDIS_URL": redis_url,
        "LUNORA_QUEUE": queue,
        "LUNORA_DATABASE_URL": database_url,
        "LUNORA_APP": "_common:lunora_app",
        # The repository before bench/, whose rag.py would shadow the rag package (celery's
        # cwd import hides that only when run from the repository).
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(BENCH_DIR), os.environ.get("PYTHONPATH", "")]),
    }
    os.environ.update(env)
    for path in (str(BENCH_DIR), str(ROOT)):
        if path not in sys.path:
            sys.path.insert(0, path)
    return env


def _create_database(prefix: str = "lunora_bench_") -> tuple[str, Any]:
    import sqlalchemy as sa

    name = prefix + uuid.uuid4().hex[:8]
    admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    return f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}", (admin, name)


def _drop_database(handle: Any) -> None:
    import sqlalchemy as sa

    admin, name = handle
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


# -- measurements ----------------------------------------------------------------------------------


def raw_chains(
    hops: int, count: int, queue: str | None = None, writes: int = 0, notices: int = 0, reads: int = 0,
    overlap: bool = False,
) -> float:
    """Run ``count`` raw chains of ``hops`` tasks at once (on ``queue``, default ``LUNORA_QUEUE``;
    each hop making ``reads`` PostgreSQL reads, committing ``writes`` rows, the last one under the
    publish with ``overlap``, and making ``notices`` more Redis round trips, see ``_common``); return
    wall ms per hop (per chain)."""
    import _common

    client = _common._redis()
    key = "bench:done:" + uuid.uuid4().hex
    start = time.time()
    for _ in range(count):
        _common.send_hop(hops, key, queue, writes, notices, reads, overlap)
    finished: list[float] = []
    deadline = time.monotonic() + 600
    try:
        while len(finished) < count:
            # Short waits: redis-py's client has a 5 s socket timeout, shorter than a loaded machine's chain.
            mark = client.blpop([key], timeout=1)
            if mark is not None:
                finished.append(float(mark[1]))
            elif time.monotonic() > deadline:
                raise TimeoutError(f"{count - len(finished)} of {count} raw chains did not finish in 600 s")
    finally:
        client.delete(key)  # chains still running after a failure re-create it, with its TTL (_common)
    return (max(finished) - start) * 1000.0 / hops


START_MS: list[float] = []
"""How long each ``agent.run()`` call took in this process (thread, run row, user message, first enqueue)."""


def engine_runs(lunora: Any, steps: int, count: int) -> float:
    """Start ``count`` runs at once; return wall ms per step (per run), from start to the last finish.

    The time includes starting the run (``agent.run()`` in this, the API, process), as a user sees it.
    """
    store = lunora.store
    start = time.time()
    ids = []
    for _ in range(count):
        began = time.perf_counter()
        ids.append(lunora.agents.bench.run(input="go", thread_key="bench-" + uuid.uuid4().hex).id)
        START_MS.append((time.perf_counter() - began) * 1000.0)
    pending = set(ids)
    finished: list[int] = []
    deadline = time.monotonic() + 120
    while pending:
        for run_id in list(pending):
            run = store.get_run(run_id)
            if run is not None and run.status in ("completed", "failed", "cancelled"):
                if run.status != "completed":
                    raise RuntimeError(f"benchmark run {run_id} ended {run.status}: {run.error}")
                finished.append(run.updated_at)
                pending.discard(run_id)
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} benchmark runs did not finish")
        # The finish time comes from the row, so polling slowly costs no accuracy — and keeps this
        # process from competing with the worker for the CPU (the raw chain's client just BLPOPs).
        time.sleep(0.05)
    # ``updated_at`` is written by the worker when the run completes (epoch ms, same clock).
    return (max(finished) / 1000.0 - start) * 1000.0 / steps


def interleaved(repeats: int, first: Any, second: Any) -> tuple[list[float], list[float]]:
    """``repeats`` samples of two measurements taken alternately, so a load change on a shared
    machine hits both the same way."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(repeats):
        a.append(first())
        b.append(second())
    return a, b


# -- main ------------------------------------------------------------------------------------------


def _cleanup_redis(broker: Any, queue: str) -> None:
    """Remove this run's queues and their kombu bindings (never the whole db: another run may share it)."""
    for name in (queue, "bench-rt-" + queue.removeprefix("bench-")):
        broker.delete(name, f"_kombu.binding.{name}", f"_kombu.binding_permanent.{name}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--concurrent", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes (prefork -c)")
    parser.add_argument("--only", choices=("all", "timing", "round-trips"), default="all")
    parser.add_argument(
        "--engine-options", default="",
        help='ablation: JSON SQLAlchemy engine options for the store, e.g. \'{"pool_pre_ping": false}\'',
    )
    args = parser.parse_args(argv)
    steps = 2 * args.turns - 1

    queue = "bench-" + uuid.uuid4().hex[:8]
    database_url, db_handle = _create_database()
    env = _configure_env(queue, database_url)
    for name, value in (("BENCH_TURNS", str(args.turns)), ("BENCH_ENGINE_OPTIONS", args.engine_options)):
        os.environ[name] = env[name] = value
    import redis as redis_lib

    broker = redis_lib.Redis.from_url(env["CELERY_BROKER_URL"])
    print(f"engine benchmark: {args.turns} turns = {steps} steps per run; worker -c {args.concurrency}; "
          f"PostgreSQL store, Redis broker, LUNORA_REDIS_URL set")
    if args.engine_options:
        print(f"  ABLATION: store engine options {args.engine_options}")
    try:
        import _common

        _common.lunora_app.store.ensure_tables()
        if args.only in ("all", "timing"):
            _timing(args, env, queue, steps)
        if args.only in ("all", "round-trips"):
            from _engine_roundtrips import count_round_trips

            _report_trips(count_round_trips("bench-rt-" + queue.removeprefix("bench-")))
    finally:
        _cleanup_redis(broker, queue)
        _drop_database(db_handle)
    return 0


def _timing(args: Any, env: dict[str, str], queue: str, steps: int) -> None:
    import _common

    from workers.testing import WorkerProcess

    lunora = _common.lunora_app
    worker = WorkerProcess(queue, env, concurrency=args.concurrency, app_module="_common")
    try:
        worker.start()
        # Warm both paths (imports, connection pools, prepared statements) before timing.
        raw_chains(steps, args.concurrency)
        engine_runs(lunora, steps, args.concurrency)
        raw_1, eng_1 = interleaved(
            args.repeats, lambda: raw_chains(steps, 1), lambda: engine_runs(lunora, steps, 1)
        )
        n = args.concurrent
        raw_n, eng_n = interleaved(
            args.repeats, lambda: raw_chains(steps, n), lambda: engine_runs(lunora, steps, n)
        )
    finally:
        worker.stop()
    _report_timing(args, steps, raw_1, eng_1, raw_n, eng_n)


def _samples(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def _report_timing(
    args: Any, steps: int, raw_1: list[float], eng_1: list[float], raw_n: list[float], eng_n: list[float]
) -> None:
    n = args.concurrent
    r1, e1 = statistics.median(raw_1), statistics.median(eng_1)
    rn, en = statistics.median(raw_n), statistics.median(eng_n)
    start_ms = statistics.median(START_MS)
    print(f"  timing: median of {args.repeats} samples, raw and engine alternating")
    print(f"  raw Celery chain   1 run : {r1:6.2f} ms/step   (samples {_samples(raw_1)})")
    print(f"  engine             1 run : {e1:6.2f} ms/step   (samples {_samples(eng_1)}; includes "
          f"agent.run() = {start_ms:.1f} ms, {start_ms / steps:.2f} ms/step)")
    print(f"  ratio engine/raw   1 run : {e1 / r1:6.2f}x   overhead {e1 - r1:+.2f} ms/step   "
          f"(best/best {min(eng_1) / min(raw_1):.2f}x, {min(eng_1) - min(raw_1):+.2f} ms/step)")
    print(f"  raw Celery chain  {n:2d} runs: {rn / n:6.2f} ms/step of throughput "
          f"({rn:.2f} ms/step per chain)")
    print(f"  engine            {n:2d} runs: {en / n:6.2f} ms/step of throughput ({en:.2f} ms/step per run)")
    print(f"  ratio engine/raw  {n:2d} runs: {en / rn:6.2f}x   overhead {(en - rn) / n:+.2f} ms/step")


def _report_trips(trips: dict[str, tuple[tuple[float, ...], dict[str, float]]]) -> None:
    print("  per step, counted in-process around execute_step (broker publish included):")
    for kind, ((sql, tx, checkouts, pg, red), calls) in sorted(trips.items()):
        print(f"    {kind:5s}: {pg:4.1f} PostgreSQL round trips ({sql:.1f} statements, "
              f"{tx:.1f} commits/rollbacks, {checkouts:.1f} pool checkouts), {red:.1f} Redis round trips")
        print("           PostgreSQL round trips by store call: "
              + ", ".join(f"{name} {n:.1f}" for name, n in sorted(calls.items(), key=lambda c: -c[1])))


if __name__ == "__main__":
    sys.exit(main())
