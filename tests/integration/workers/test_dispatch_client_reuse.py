"""``CeleryDispatcher`` on Redis reuses one redis-py client per producer channel (kombu would build
one per publish), and every message still lands on the queue, single or fanned out."""

from __future__ import annotations

import pytest
import redis

from lunora_jobs.engine.dispatch import StepTask
from workers.dispatch import CeleryDispatcher

pytestmark = pytest.mark.integration


def test_publishes_share_one_client_and_all_land(redis_url: str, redis_prefix: str) -> None:
    queue = f"{redis_prefix}-q"
    dispatcher = CeleryDispatcher(broker_url=redis_url, queue=queue)
    seen: list[object] = []  # the clients themselves: kept alive, so two fresh ones cannot share an id
    try:
        for i in range(3):
            dispatcher.dispatch([StepTask(f"run-{i}", "llm:turn:0", "turn")])
            with dispatcher.app.producer_or_acquire() as prod, prod.channel.conn_or_acquire() as client:
                seen.append(client)
        dispatcher.dispatch([StepTask("run-9", f"tool:t:c{i}", "tool") for i in range(4)])  # one batch
        check = redis.Redis.from_url(redis_url)
        assert check.llen(queue) == 7
        assert all(client is seen[0] for client in seen)
    finally:
        check = redis.Redis.from_url(redis_url)
        check.delete(queue, f"_kombu.binding.{queue}")
        check.close()
