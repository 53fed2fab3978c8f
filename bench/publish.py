"""Micro-benchmark: one step's publish through ``CeleryDispatcher``, kombu's stock Redis transport
against Lunora's (``workers.redis_transport``), side by side in one process.

    python bench/publish.py [--blocks 6] [--publishes 2000]

Each block publishes ``--publishes`` single-step dispatches on each transport in turn (the two
alternating, so a change of load hits both) to a private queue on Redis db 15 that nobody consumes;
the queue is removed afterwards. Prints, per transport, this process's CPU and the wall time per
publish (medians over the blocks) and the ratio of ours to the stock one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BROKER = "redis://127.0.0.1:6379/15"


def main(argv: list[str] | None = None) -> int:
    """Publish on both transports, alternating, and print the medians and their ratio."""
    import redis

    from lunora_jobs.engine.dispatch import StepTask
    from workers.celery_app import make_app
    from workers.dispatch import CeleryDispatcher

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--publishes", type=int, default=2000)
    args = parser.parse_args(argv)
    queue = "bench-publish-" + uuid.uuid4().hex[:8]
    stock = make_app(BROKER, queue)
    stock.conf.broker_transport = None  # kombu's own Redis transport, as a Celery user's
    dispatchers = {"kombu's Redis transport": CeleryDispatcher(app=stock),
                   "Lunora's Redis transport": CeleryDispatcher(app=make_app(BROKER, queue))}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in dispatchers}
    client = redis.Redis.from_url(BROKER)
    try:
        for dispatcher in dispatchers.values():  # connect, declare, warm
            for n in range(200):
                dispatcher.dispatch([StepTask("warm", f"llm:turn:{n}", "turn")])
        for _ in range(args.blocks):
            for name, dispatcher in dispatchers.items():
                tasks = [StepTask(uuid.uuid4().hex, f"llm:turn:{n}", "turn") for n in range(args.publishes)]
                cpu, wall = time.process_time(), time.perf_counter()
                for task in tasks:
                    dispatcher.dispatch([task])
                samples[name].append(((time.process_time() - cpu) * 1000.0 / args.publishes,
                                      (time.perf_counter() - wall) * 1000.0 / args.publishes))
    finally:
        client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        client.close()
    medians = {name: (statistics.median(c for c, _ in values), statistics.median(w for _, w in values))
               for name, values in samples.items()}
    print(f"one step's publish through CeleryDispatcher, {args.blocks} alternating blocks of "
          f"{args.publishes} (medians)")
    for name, (cpu_ms, wall_ms) in medians.items():
        print(f"  {name:26s} {cpu_ms:.3f} ms CPU, {wall_ms:.3f} ms wall per publish")
    (stock_cpu, stock_wall), (ours_cpu, ours_wall) = medians.values()
    print(f"  ours / stock: {ours_cpu / stock_cpu:.2f}x CPU, {ours_wall / stock_wall:.2f}x wall")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
