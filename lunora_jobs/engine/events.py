"""Live thread updates: a tiny publish hook the engine calls when a thread changes.

The engine publishes ``{"type": ..., "thread_key": ..., ...}`` events — ``state`` when a tool's
``set_state`` changed the synced state, ``status`` when a run hibernates, resumes, ends or is
cancelled. ``LocalEventBus`` delivers them to in-process listeners (the embedded default, tests);
``RedisEventBus`` also publishes each one as JSON on the thread's Redis pub/sub channel
(``keys.thread_events_channel``), which an API process relays to its SSE clients.

Publishing is best-effort (a live view, not a record): the database stays the source of truth, a
listener or Redis failure is logged and never fails the step.

Example::

    bus = LocalEventBus()
    unsubscribe = bus.subscribe(lambda event: print(event["type"], event["thread_key"]))
    bus.publish("t1", {"type": "state", "state": {"step": 1}})
    unsubscribe()
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from lunora_jobs import jsonio
from lunora_jobs.engine.keys import DEFAULT_PREFIX, thread_events_channel

log = logging.getLogger(__name__)

Event = dict[str, Any]
Listener = Callable[[Event], None]


@runtime_checkable
class EventBus(Protocol):
    """Where the engine announces thread changes."""

    def publish(self, thread_key: str, event: Event) -> None:
        """Deliver ``event`` (``thread_key`` is added to it) to whoever listens."""
        ...

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every event published in this process; returns an unsubscribe."""
        ...


class LocalEventBus:
    """In-process listeners (thread-safe). ``published`` counts every event sent, for tests."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._guard = threading.Lock()
        self.published = 0

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add ``listener``; the returned function removes it."""
        with self._guard:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._guard:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def publish(self, thread_key: str, event: Event) -> None:
        """Call every listener; a failing listener is logged and skipped."""
        event = {**event, "thread_key": thread_key}
        with self._guard:
            listeners = list(self._listeners)
            self.published += 1
        for listener in listeners:
            try:
                listener(event)
            except Exception:
                log.exception("lunora: an event listener raised; the event was still published")


@dataclass(frozen=True, slots=True)
class RedisPublish:
    """One PUBLISH of a ``RedisEventBus``, prepared but not sent: a dispatcher on the same Redis server
    (``server``, see ``redis_server``) sends it in the round trip of its enqueue
    (``engine.dispatch.PublishCarrier``); otherwise ``RedisEventBus.send`` does."""

    server: tuple[Any, ...]
    channel: str
    payload: str


def redis_server(connection_kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
    """Which Redis server a redis-py pool with ``connection_kwargs`` reaches: host, port, user,
    password, socket path. The db is left out: a PUBLISH reaches the server's subscribers of every db."""
    return tuple(connection_kwargs.get(key) for key in ("host", "port", "username", "password", "path"))


class RedisEventBus(LocalEventBus):
    """Local listeners plus ``PUBLISH <prefix>:events:thread:<key> <json>`` (one round trip).

    Example::

        bus = RedisEventBus.from_url("redis://127.0.0.1:6379/0", prefix="myapp")
    """

    def __init__(self, client: Any, *, prefix: str = DEFAULT_PREFIX) -> None:
        super().__init__()
        self.client = client
        self.prefix = prefix
        pool = getattr(client, "connection_pool", None)
        self.server: tuple[Any, ...] | None = (
            redis_server(pool.connection_kwargs) if pool is not None else None)
        """The Redis server this bus publishes to (``redis_server``); None for a client without a pool."""

    @classmethod
    def from_url(cls, url: str, *, prefix: str = DEFAULT_PREFIX) -> RedisEventBus:
        """Connect with redis-py (pooled, lazy)."""
        import redis

        return cls(redis.Redis.from_url(url), prefix=prefix)

    def publish(self, thread_key: str, event: Event) -> None:
        """Publish locally, then on the thread's channel (a Redis failure is logged, not raised)."""
        self.send(self.prepare(thread_key, event))

    def prepare(self, thread_key: str, event: Event) -> RedisPublish:
        """Publish locally now; return the Redis half of ``publish`` for ``send`` or a dispatcher."""
        super().publish(thread_key, event)
        payload = jsonio.dumps({**event, "thread_key": thread_key}, default=str)
        return RedisPublish(self.server or (), thread_events_channel(self.prefix, thread_key), payload)

    def send(self, prepared: RedisPublish) -> None:
        """The PUBLISH of ``prepared`` (a Redis failure is logged, not raised)."""
        import redis

        try:
            self.client.publish(prepared.channel, prepared.payload)
        except redis.RedisError:
            log.warning("lunora: could not publish a live update on %r", prepared.channel, exc_info=True)
