"""Benchmark: Lunora Jobs with kombu's ack emulation off (the default) against on, side by side.

    python bench/redelivery.py [--rounds 7] [--concurrent 30]

Two 2-process ``celery worker`` fleets on private queues (Redis db 15) and one PostgreSQL database
(created here, dropped at the end): one with ``LUNORA_VISIBILITY_TIMEOUT`` unset (0: Redis keeps
no copy of a delivered message, ``workers.celery_app.redelivery_options``), one with it at 3600
(kombu's ack emulation, Celery's default: an ``unacked`` copy written at each delivery and removed
at each ack, two round trips of the worker's consumer per step). Each round runs, on each fleet in
turn (the order alternating, so a change of load hits both), three single runs (per-step latency,
their median) and ``--concurrent`` runs at once (steps/s); K = 11 steps per run (6 turns, a no-op
tool between them). Prints the medians over the rounds and the ratios of the default to the other.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import uuid
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:0] = [p for p in (str(BENCH_DIR.parent), str(BENCH_DIR)) if p not in sys.path]

from engine import _configure_env, _create_database, _drop_database  # noqa: E402

STEPS = 11
FLEETS: dict[str, dict[str, str]] = {
    "ack emulation off (default)": {},
    "ack emulation on (3600 s)": {"LUNORA_VISIBILITY_TIMEOUT": "3600"},
}
"""Fleet name -> the environment its workers get on top of the benchmark's."""


def main(argv: list[str] | None = None) -> int:
    """Measure both fleets round by round and print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--concurrent", type=int, default=30)
    args = parser.parse_args(argv)
    queues = {name: f"redelivery-{n}-{uuid.uuid4().hex[:8]}" for n, name in enumerate(FLEETS)}
    database_url, handle = _create_database("lunora_redelivery_")
    env = _configure_env(next(iter(queues.values())), database_url)
    os.environ["BENCH_TURNS"] = env["BENCH_TURNS"] = str((STEPS + 1) // 2)
    import redis
    from _peer_celery import LunoraSystem

    from workers.testing import WorkerProcess

    broker_url = env["CELERY_BROKER_URL"]
    systems = {name: LunoraSystem(STEPS, {2: queue}, broker_url) for name, queue in queues.items()}
    workers = [WorkerProcess(queues[name], {**env, **extra}, concurrency=2, app_module="_common")
               for name, extra in FLEETS.items()]
    latency: dict[str, list[float]] = {name: [] for name in FLEETS}
    throughput: dict[str, list[float]] = {name: [] for name in FLEETS}
    try:
        for worker in workers:
            worker.start()
        for system in systems.values():  # warm: imports, pools, prepared statements
            system.batch(1, 2)
            system.batch(10, 2)
        for n in range(args.rounds):
            order = list(systems.items()) if n % 2 == 0 else list(systems.items())[::-1]
            for name, system in order:
                latency[name].append(statistics.median(system.batch(1, 2) * 1000.0 / STEPS for _ in range(3)))
                throughput[name].append(args.concurrent * STEPS / system.batch(args.concurrent, 2))
    finally:
        for worker in workers:
            worker.stop()
        for system in systems.values():
            system.close()
        _drop_database(handle)
        broker = redis.Redis.from_url(broker_url)
        for queue in queues.values():
            broker.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
    print(f"Lunora Jobs, K = {STEPS} steps per run, 2 worker processes per fleet, {args.rounds} alternating "
          f"rounds (medians)")
    for name in FLEETS:
        print(f"  {name:30s} {statistics.median(latency[name]):6.2f} ms/step (1 in flight)   "
              f"{statistics.median(throughput[name]):5.0f} steps/s ({args.concurrent} in flight)")
    off, on = FLEETS
    print(f"  off / on: {statistics.median(latency[off]) / statistics.median(latency[on]):.2f}x ms/step, "
          f"{statistics.median(throughput[off]) / statistics.median(throughput[on]):.2f}x steps/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
