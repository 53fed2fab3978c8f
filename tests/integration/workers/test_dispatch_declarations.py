"""``CeleryDispatcher`` declares a queue once per broker channel, not on every publish, on real brokers.

RabbitMQ is where a declaration matters (a message published to a queue the broker does not have
is dropped), so that is where a reconnect is shown to declare again: the test deletes its queue on
the broker, closes the producer's connection, and the next publish recreates the queue.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from suite_settings import settings

from lunora_jobs.config import StepRoute
from lunora_jobs.engine.dispatch import StepTask
from workers.dispatch import CeleryDispatcher

pytestmark = pytest.mark.integration


def _turns_sent(
    broker_url: str, queue: str, monkeypatch: pytest.MonkeyPatch, routes: dict[str, StepRoute] | None = None,
) -> tuple[CeleryDispatcher, list[Any]]:
    """A dispatcher that sent turns 0-2 of one run, and the ``declare`` argument of each publish so far
    and to come (``send_task_message`` of this dispatcher's app)."""
    dispatcher = CeleryDispatcher(broker_url, queue, routes=routes)
    seen: list[Any] = []
    amqp = dispatcher.app.amqp
    publish = amqp.send_task_message

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("declare"))
        return publish(*args, **kwargs)

    monkeypatch.setattr(amqp, "send_task_message", recording)
    for i in range(3):
        dispatcher.dispatch(_turn(i))
    return dispatcher, seen


def _turn(i: int) -> list[StepTask]:
    return [StepTask("r1", f"llm:turn:{i}", "turn")]


@pytest.fixture
def amqp_queue(redis_prefix: str) -> Iterator[str]:
    """A queue name of this test's own on the shared RabbitMQ; deleted afterwards."""
    name = f"{redis_prefix}-declare"
    yield name
    from kombu import Connection

    with Connection(settings.amqp_url) as conn:
        conn.default_channel.queue_delete(name)


def _message_count(queue: str) -> int:
    from kombu import Connection

    with Connection(settings.amqp_url) as conn:
        return int(conn.default_channel.queue_declare(queue, passive=True).message_count)


def test_rabbitmq_queue_declared_once_per_channel_and_again_after_a_reconnect(
    amqp_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dispatcher, seen = _turns_sent(settings.amqp_url, amqp_queue, monkeypatch)
    assert seen == [None, [], []]  # Celery declared the queue on the first publish only
    assert _message_count(amqp_queue) == 3

    from kombu import Connection

    with Connection(settings.amqp_url) as conn:  # the broker loses the queue...
        conn.default_channel.queue_delete(amqp_queue)
    with dispatcher.app.producer_or_acquire() as producer:  # ... and the producer its connection
        producer.connection.close()
    seen.clear()
    dispatcher.dispatch(_turn(3))
    dispatcher.dispatch(_turn(4))
    assert seen == [None, []]  # the reconnected channel declared the queue again
    assert _message_count(amqp_queue) == 2


def test_redis_queue_declared_once_and_every_publish_delivered(
    queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Redis, kinds routed by ``LUNORA_STEP_ROUTES`` take Celery's path (the others go straight onto
    the queue's key, ``workers.redis_publish``, and declare nothing)."""
    routes = {"turn": StepRoute(queue=queue), "tool": StepRoute(queue=queue)}
    dispatcher, seen = _turns_sent(settings.redis_url, queue, monkeypatch, routes)
    dispatcher.dispatch([StepTask("r1", f"tool:t:c{i}", "tool") for i in range(2)])
    assert seen == [None, [], [], [], []]
    assert redis.Redis.from_url(settings.redis_url).llen(queue) == 5
    _, untouched = _turns_sent(settings.redis_url, queue, monkeypatch)
    assert untouched == []  # Celery's publish path never ran
    assert redis.Redis.from_url(settings.redis_url).llen(queue) == 8
