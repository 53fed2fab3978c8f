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

import json
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

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


class RedisEventBus(LocalEventBus):
    """Local listeners plus ``PUBLISH <prefix>:events:thread:<key> <json>`` (one round trip).

    Example::

        bus = RedisEventBus.from_url("redis://127.0.0.1:6379/0", prefix="myapp")
    """

    def __init__(self, client: Any, *, prefix: str = DEFAULT_PREFIX) -> None:
        super().__init__()
        self.client = client
        self.prefix = prefix

    @classmethod
    def from_url(cls, url: str, *, prefix: str = DEFAULT_PREFIX) -> RedisEventBus:
        """Connect with redis-py (pooled, lazy)."""
        import redis

        return cls(redis.Redis.from_url(url), prefix=prefix)

    def publish(self, thread_key: str, event: Event) -> None:
        """Publish locally, then on the thread's channel (a Redis failure is logged, not raised)."""
        import redis

        super().publish(thread_key, event)
        payload = json.dumps({**event, "thread_key": thread_key}, default=str)
        try:
            self.client.publish(thread_events_channel(self.prefix, thread_key), payload)
        except redis.RedisError:
            log.warning("lunora: could not publish a live update for thread %r", thread_key, exc_info=True)
