"""``workers.redis_transport``: kombu's Redis transport sharing one redis-py client per pool, on real Redis.

The worker fleet, routing and chaos tests run every worker on it (``make_app`` picks it for
``redis://``); these pin what it must keep: it is chosen only for plain ``redis://``, it builds no
client per command, it never shares the consumer's pinned connection, and its messages, acks and
restores are kombu's own, readable both ways with the stock transport.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
from kombu import Connection
from suite_settings import settings

from lunora_jobs.engine.dispatch import StepTask
from workers.celery_app import make_app
from workers.dispatch import CeleryDispatcher
from workers.redis_transport import TRANSPORT, Transport, serves

pytestmark = pytest.mark.integration

BROKER = settings.redis_url


@pytest.fixture
def keyprefix(redis_prefix: str) -> Iterator[str]:
    """A kombu ``global_keyprefix`` of this test's own: queues, bindings and the unacked index."""
    prefix = f"{redis_prefix}:"
    yield prefix
    client = redis.Redis.from_url(BROKER)
    keys = list(client.scan_iter(f"{prefix}*"))
    if keys:
        client.delete(*keys)
    client.close()


def _connection(keyprefix: str, transport: Any = None) -> Connection:
    return Connection(BROKER, transport=transport, transport_options={"global_keyprefix": keyprefix})


def test_only_a_plain_redis_broker_gets_it() -> None:
    assert serves("redis://127.0.0.1:6379/0")
    for url in ("rediss://127.0.0.1:6379/0", "amqp://guest:guest@127.0.0.1:5672//",
                "redis://127.0.0.1:6379/0;redis://127.0.0.1:6380/0", "sentinel://127.0.0.1:26379"):
        assert not serves(url), url
    app = make_app(BROKER, "q-transport")
    assert app.conf.broker_transport == TRANSPORT
    with app.connection_for_write() as conn:
        assert conn.get_transport_cls() is Transport
    assert make_app("amqp://guest:guest@127.0.0.1:5672//", "q-transport").conf.broker_transport is None


def test_commands_share_one_client_per_pool(keyprefix: str) -> None:
    with _connection(keyprefix, Transport) as conn:
        channel = conn.default_channel
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
            assert first is second
        assert first.ping()
        # A client kombu pins a connection to (as the consumer's BRPOP client) is never handed out.
        first.connection = channel.pool.get_connection()
        try:
            with channel.conn_or_acquire() as third:
                assert third is not first and third.connection is None
                assert third.ping()
        finally:
            channel.pool.release(first.connection)
            first.connection = None
    # The stock transport builds one per command: the cost this transport removes.
    with _connection(keyprefix) as conn:
        channel = conn.default_channel
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
            assert first is not second


@pytest.mark.parametrize("producer_side, consumer_side", [(Transport, None), (None, Transport)])
def test_messages_acks_and_restores_interoperate_with_the_stock_transport(
    keyprefix: str, producer_side: Any, consumer_side: Any
) -> None:
    sent = [{"n": n} for n in range(10)]
    with _connection(keyprefix, producer_side) as producer:
        queue = producer.SimpleQueue("interop")
        for body in sent:
            queue.put(body)
        queue.close()
    with _connection(keyprefix, consumer_side) as consumer:
        queue = consumer.SimpleQueue("interop")
        received = []
        for _ in sent:
            message = queue.get(timeout=5)
            received.append(message.payload)
            message.ack()
        assert received == sent
        queue.put({"n": "unacked"})
        assert queue.get(timeout=5).payload == {"n": "unacked"}  # taken, never acked
        queue.close()
    # Closing the consumer's channel put the unacked message back; nothing is left in the index.
    with _connection(keyprefix, producer_side) as again:
        queue = again.SimpleQueue("interop")
        message = queue.get(timeout=5)
        assert message.payload == {"n": "unacked"}
        message.ack()
        queue.close()
    client = redis.Redis.from_url(BROKER)
    assert client.hlen(f"{keyprefix}unacked") == 0
    client.close()


def test_threads_publishing_through_one_dispatcher_lose_nothing(queue: str) -> None:
    dispatcher = CeleryDispatcher(app=make_app(BROKER, queue))
    tasks = [StepTask(f"run-{n}", f"tool:t:{n}", "tool") for n in range(200)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda task: dispatcher.dispatch([task]), tasks))
    client = redis.Redis.from_url(BROKER)
    assert client.llen(queue) == len(tasks)
    client.close()
