"""``CeleryDispatcher`` on a Redis broker writes kombu's own envelope, straight onto the queue's key,
with a live notice for the same server in the same round trip (``workers.redis_publish``).

The envelope is compared field by field with the one kombu's transport writes for the same task
(the same dispatcher, publishing a kind routed through Celery's path), so a kombu release that
changed its format fails here. Real Celery workers consume messages sent this way in every fleet
and chaos test (``fleet_support`` dispatches through ``CeleryDispatcher``).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import redis
import redis.connection
from private_redis import PrivateRedis
from suite_settings import settings

from lunora_jobs.config import StepRoute
from lunora_jobs.engine.dispatch import PublishCarrier, StepTask
from lunora_jobs.engine.events import RedisEventBus, RedisPublish, redis_server
from workers import redis_publish
from workers.celery_app import make_app
from workers.dispatch import CeleryDispatcher

pytestmark = pytest.mark.integration

BROKER = settings.redis_url


def _raw(queue: str) -> list[dict[str, Any]]:
    client = redis.Redis.from_url(BROKER)
    try:
        return [json.loads(item) for item in reversed(client.lrange(queue, 0, -1))]
    finally:
        client.close()


def test_the_envelope_is_kombus_own(queue: str) -> None:
    """The same task (a delayed one: Celery's ``eta`` header too) published by kombu (the ``tool`` kind
    routed to the same queue takes Celery's path) and straight onto the key: equal but for the
    task name (the kinds differ), the delivery tag (drawn fresh per message) and the ``eta`` (each
    publish's own clock)."""
    dispatcher = CeleryDispatcher(BROKER, queue, routes={"tool": StepRoute(queue=queue)})
    assert dispatcher._direct is not None  # a plain redis:// broker on Lunora's transport
    dispatcher.dispatch([StepTask("r1", "tool:t:c1", "tool", 2.5)])
    dispatcher.dispatch([StepTask("r1", "tool:t:c1", "turn", 2.5)])
    via_kombu, direct = _raw(queue)
    for message in (via_kombu, direct):
        assert message["properties"].pop("delivery_tag")
        message["headers"].pop("eta")
    assert via_kombu["headers"].pop("task") == "lunora.tool"
    assert direct["headers"].pop("task") == "lunora.turn"
    assert direct == via_kombu


def test_a_notice_rides_with_the_enqueue_in_one_round_trip(
    queue: str, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dispatcher = CeleryDispatcher(BROKER, queue)
    assert isinstance(dispatcher, PublishCarrier)
    bus = RedisEventBus.from_url(BROKER, prefix=redis_prefix)
    listener = redis.Redis.from_url(BROKER).pubsub()
    listener.subscribe(f"{redis_prefix}:events:thread:t1")
    assert listener.get_message(timeout=2) is not None  # the subscription's confirmation
    sends: list[Any] = []
    original: Any = redis.connection.AbstractConnection.send_packed_command

    def counting(conn: Any, command: Any, check_health: bool = True) -> Any:
        sends.append(command)
        return original(conn, command, check_health)

    dispatcher.dispatch([StepTask("r0", "llm:turn:0", "turn")])  # connects: the handshake is not counted
    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counting)
    prepared = bus.prepare("t1", {"type": "messages", "run_id": "r1", "step": "llm:turn:0"})
    fan_out = [StepTask("r1", f"tool:t:c{i}", "tool") for i in range(3)]
    assert dispatcher.dispatch_and_publish(fan_out, prepared) is True
    assert len(sends) == 1  # three LPUSHes and the PUBLISH, pipelined
    monkeypatch.undo()
    assert [m["headers"]["id"] for m in _raw(queue)][1:] == [f"r1:tool:t:c{i}" for i in range(3)]
    deadline = time.monotonic() + 5
    notice = None
    while notice is None and time.monotonic() < deadline:
        notice = listener.get_message(timeout=0.5)
    listener.close()
    assert notice is not None and json.loads(notice["data"]) == {
        "type": "messages", "run_id": "r1", "step": "llm:turn:0", "thread_key": "t1"}
    assert bus.published == 1  # local listeners heard it too, once


def test_a_notice_for_another_server_is_left_to_the_caller(queue: str) -> None:
    dispatcher = CeleryDispatcher(BROKER, queue)
    elsewhere = RedisPublish(redis_server({"host": "127.0.0.1", "port": 1}), "ch", "{}")
    assert dispatcher.dispatch_and_publish([StepTask("r1", "llm:turn:1", "turn")], elsewhere) is False
    assert [m["headers"]["id"] for m in _raw(queue)] == ["r1:llm:turn:1"]  # the enqueue still went out


def test_only_a_plain_redis_broker_on_lunoras_transport_goes_straight_to_the_key() -> None:
    assert redis_publish.serves(make_app(BROKER, "q"))
    assert not redis_publish.serves(make_app(settings.amqp_url, "q"))
    keyed = make_app(BROKER, "q")
    keyed.conf.broker_transport_options = {"global_keyprefix": "x:"}  # kombu would rename the keys
    assert not redis_publish.serves(keyed)
    assert CeleryDispatcher(app=keyed)._direct is None


def test_a_notice_for_a_bus_on_another_server_still_follows_the_enqueue(
    queue: str, private_redis: PrivateRedis
) -> None:
    """``LUNORA_REDIS_URL`` on another server than the broker: ``notices.send`` enqueues on the broker,
    then publishes the notice on the bus's own server (two round trips, nothing lost)."""
    from lunora_jobs.engine.context import EngineDeps
    from lunora_jobs.engine.locks import LocalLock
    from lunora_jobs.engine.notices import Notice, send
    from lunora_jobs.store.memory import InMemoryStore

    bus = RedisEventBus.from_url(private_redis.url(), prefix="elsewhere")
    deps = EngineDeps(store=InMemoryStore(), dispatcher=CeleryDispatcher(BROKER, queue), lock=LocalLock(),
                      agents={}, run_function=lambda *args: None, events=bus)
    listener = redis.Redis.from_url(private_redis.url()).pubsub()
    listener.subscribe("elsewhere:events:thread:t1")
    assert listener.get_message(timeout=2) is not None  # the subscription's confirmation
    send(deps, [StepTask("r1", "llm:turn:1", "turn")], Notice("t1", {"type": "messages", "run_id": "r1"}))
    assert [m["headers"]["id"] for m in _raw(queue)] == ["r1:llm:turn:1"]
    deadline = time.monotonic() + 5
    notice = None
    while notice is None and time.monotonic() < deadline:
        notice = listener.get_message(timeout=0.5)
    listener.close()
    assert notice is not None and json.loads(notice["data"])["run_id"] == "r1"
    assert bus.published == 1
