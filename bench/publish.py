"""Micro-benchmark: one step's publish (and its live notice), Celery's default path against
``CeleryDispatcher``'s, side by side in one process.

    python bench/publish.py [--blocks 6] [--publishes 2000]

Ways to publish, each lever added to the one before:

1. kombu's stock Redis transport, the queue declared on every publish (Celery's default);
2. Lunora's Redis transport (``workers.redis_transport``: one redis-py client per pool);
3. and the queue declared once per broker channel (``CeleryDispatcher``'s path for routed kinds);
4. straight onto the queue's key (``workers.redis_publish``): ``CeleryDispatcher`` as it ships.

Then a step's publish with its live notice (a PUBLISH on the thread's channel, ``RedisEventBus``):

5. 3., then the notice's own round trip (how every step sent them before the notice rode along);
6. 4. with the notice pipelined after the enqueue (``dispatch_and_publish``): one round trip.

Each block publishes ``--publishes`` single-step dispatches each way in turn (alternating, so a
change of load hits all) to a private queue on Redis db 15 that nobody consumes (nobody listens to
the channel either); the queue is removed afterwards. Prints this process's CPU and the wall time per
publish (medians over the blocks) and the ratios to the first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BROKER = "redis://127.0.0.1:6379/15"


def main(argv: list[str] | None = None) -> int:
    """Publish every way, alternating, and print the medians and their ratios."""
    import redis

    from lunora_jobs.engine.dispatch import StepTask
    from workers.celery_app import make_app
    from workers.dispatch import CeleryDispatcher

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--publishes", type=int, default=2000)
    args = parser.parse_args(argv)
    queue = "bench-publish-" + uuid.uuid4().hex[:8]

    class DeclaringEveryPublish(CeleryDispatcher):
        """Celery's default ``declare``: kombu's cache skips the declaration after copying the queue."""

        def _send(self, producer: Any, task: StepTask) -> None:
            name, message = self._message(task)
            self.app.amqp.send_task_message(producer, name, message, queue=self.queue)

    from lunora_jobs.config import StepRoute
    from lunora_jobs.engine.events import RedisEventBus

    stock = make_app(BROKER, queue)
    stock.conf.broker_transport = None  # kombu's own Redis transport, as a Celery user's
    ours = make_app(BROKER, queue)
    through_celery = {"turn": StepRoute(queue=queue)}  # a routed kind takes Celery's publish path
    declared_once = CeleryDispatcher(app=ours, routes=through_celery)
    shipping = CeleryDispatcher(app=ours)
    bus = RedisEventBus.from_url(BROKER, prefix="bench-publish-" + uuid.uuid4().hex[:8])

    def notice(task: StepTask) -> dict[str, Any]:
        return {"type": "messages", "run_id": task.run_id, "step": task.step}

    def then_notice(task: StepTask) -> None:
        declared_once.dispatch([task])
        bus.publish("bench-thread", notice(task))

    def riding(task: StepTask) -> None:
        if not shipping.dispatch_and_publish([task], bus.prepare("bench-thread", notice(task))):
            raise RuntimeError("the notice did not ride with the enqueue")

    ways: dict[str, Any] = {
        "stock transport, declaring": DeclaringEveryPublish(app=stock, routes=through_celery).dispatch,
        "our transport, declaring": DeclaringEveryPublish(app=ours, routes=through_celery).dispatch,
        "our transport, declared once": declared_once.dispatch,
        "straight onto the key": shipping.dispatch,
        "declared once, then the notice": lambda tasks: then_notice(tasks[0]),
        "onto the key, the notice riding": lambda tasks: riding(tasks[0]),
    }
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    client = redis.Redis.from_url(BROKER)
    try:
        for way in ways.values():  # connect, declare, warm
            for n in range(200):
                way([StepTask("warm", f"llm:turn:{n}", "turn")])
        for _ in range(args.blocks):
            for name, way in ways.items():
                tasks = [StepTask(uuid.uuid4().hex, f"llm:turn:{n}", "turn") for n in range(args.publishes)]
                cpu, wall = time.process_time(), time.perf_counter()
                for task in tasks:
                    way([task])
                samples[name].append(((time.process_time() - cpu) * 1000.0 / args.publishes,
                                      (time.perf_counter() - wall) * 1000.0 / args.publishes))
    finally:
        client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        client.close()
    medians = {name: (statistics.median(c for c, _ in values), statistics.median(w for _, w in values))
               for name, values in samples.items()}
    print(f"one step's publish on Redis (then with its live notice), {len(ways)} ways, {args.blocks} "
          f"alternating blocks of {args.publishes} (medians)")
    stock_cpu, stock_wall = medians["stock transport, declaring"]
    for name, (cpu_ms, wall_ms) in medians.items():
        print(f"  {name:32s} {cpu_ms:.3f} ms CPU ({cpu_ms / stock_cpu:.2f}x), "
              f"{wall_ms:.3f} ms wall ({wall_ms / stock_wall:.2f}x) per publish")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
