"""Step messages onto a Redis broker in one round trip, with a live notice riding along.

``CeleryDispatcher`` on Lunora's Redis transport (``workers.redis_transport``) publishes through this:
Celery builds each task message (``amqp.create_task_message``: its headers, properties and body,
protocol 2), and the message goes onto the queue as the very envelope kombu's Redis transport writes
for it (``kombu_envelope``: the body JSON-serialised and base64-encoded, the anonymous exchange, the
queue as the routing key, a fresh delivery tag), by one LPUSH per task in one pipeline. Through
``send_task_message`` the same publish took kombu's producer pool, its connection-retry wrapper and its
channel's put, ~0.3 ms of CPU per step more (``python bench/publish.py``), and the live notice that
follows a step's dispatch another round trip; here a notice for the same Redis server
is one more command in the pipeline, after the LPUSHes (``RedisPublish``).

The envelope is pinned to kombu's own: ``tests/integration/workers/test_redis_publish.py`` publishes a
message both ways and compares them field by field, and real workers consume these messages in every
fleet and chaos test, so a kombu release that changed its format fails CI instead of a fleet. Celery's
``before_task_publish`` / ``after_task_publish`` signals are not sent for them (nothing in Lunora
listens: a run's trace context travels in its run row, not in the message headers).

Only what kombu's transport would put on the queue's own key goes this way: a plain ``redis://`` broker
on Lunora's transport, with no transport option that changes keys or priorities, and a message of the
default priority (``serves``). Everything else takes Celery's path.
"""

from __future__ import annotations

import base64
import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any

import redis
from celery import Celery

from lunora_jobs import jsonio
from lunora_jobs.engine.events import RedisPublish, redis_server
from workers import redis_transport

log = logging.getLogger(__name__)

__all__ = ["RedisPublisher", "kombu_envelope", "serves"]

_PLAIN_OPTIONS = frozenset({"ack_emulation", "visibility_timeout"})
"""Transport options that leave the producer's keys and envelope alone (both act on the consumer)."""


def serves(app: Celery) -> bool:
    """Whether ``app``'s messages can go straight onto their queue's key: its broker is one plain
    ``redis://`` server on Lunora's transport, and no transport option renames keys (``global_keyprefix``,
    ``sep``) or sets priority steps."""
    conf = app.conf
    url = str(conf.broker_url or "")
    options = dict(conf.broker_transport_options or {})
    return (redis_transport.serves(url) and conf.broker_transport == redis_transport.TRANSPORT
            and set(options) <= _PLAIN_OPTIONS)


def kombu_envelope(message: Any, queue: str) -> str:
    """The JSON kombu's Redis transport LPUSHes for a Celery ``message`` (``create_task_message``'s
    ``(headers, properties, body, sent_event)``) published to ``queue`` through the anonymous exchange."""
    headers, properties, body, _ = message
    # The body byte for byte as kombu encodes it (its spacing); the envelope around it is read as JSON.
    encoded = base64.b64encode(json.dumps(body).encode("utf-8")).decode("ascii")
    return jsonio.dumps({
        "body": encoded, "content-encoding": "utf-8", "content-type": "application/json",
        "headers": headers,
        "properties": {
            **properties, "delivery_mode": 2, "delivery_info": {"exchange": "", "routing_key": queue},
            "priority": 0, "body_encoding": "base64", "delivery_tag": str(uuid.uuid4()),
        },
    })


class RedisPublisher:
    """LPUSHes envelopes (and PUBLISHes notices for its own server) in one pipelined round trip."""

    def __init__(self, broker_url: str) -> None:
        # One pool per dispatcher; redis-py resets it in a forked child before its first use there.
        self.client = redis.Redis.from_url(broker_url)
        self.server = redis_server(self.client.connection_pool.connection_kwargs)

    def send(self, envelopes: Sequence[tuple[str, str]], publishes: Sequence[RedisPublish] = ()) -> None:
        """LPUSH each ``(queue, envelope)``, then each publish: one round trip. A failed LPUSH raises
        (the step's task retries); a failed PUBLISH is logged (a live notice is best-effort)."""
        commands: list[tuple[str, ...]] = [("LPUSH", queue, envelope) for queue, envelope in envelopes]
        commands.extend(("PUBLISH", publish.channel, publish.payload) for publish in publishes)
        replies = self._round_trip(commands)
        pushed = len(envelopes)
        for reply in replies[:pushed]:
            if isinstance(reply, Exception):
                raise reply
        for publish, reply in zip(publishes, replies[pushed:], strict=True):
            if isinstance(reply, Exception):
                log.warning("lunora: could not publish on %r: %s", publish.channel, reply)

    def _round_trip(self, commands: Sequence[tuple[str, ...]]) -> list[Any]:
        """``commands`` written at once on a pooled connection, and their replies (an error reply as
        its exception). A pipeline without its bookkeeping (the command stack, the response
        callbacks, a client object per call): a quarter of the CPU of an LPUSH and a PUBLISH. A
        dropped connection is retried by the connection's own retry policy, as redis-py's pipeline
        does (a repeated LPUSH is a duplicate message, which the step's claim turns into a no-op)."""
        pool = self.client.connection_pool
        connection: Any = pool.get_connection()
        try:
            replies: list[Any] = connection.retry.call_with_retry(
                lambda: self._exchange(connection, commands), lambda _error: connection.disconnect())
            return replies
        finally:
            pool.release(connection)

    @staticmethod
    def _exchange(connection: Any, commands: Sequence[tuple[str, ...]]) -> list[Any]:
        connection.send_packed_command(connection.pack_commands(commands))
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(connection.read_response())
            except redis.ResponseError as error:
                replies.append(error)
        return replies
