"""Where an API process hears about thread changes: one subscription per open stream.

``RedisHub`` (production) keeps ONE pub/sub connection per API process and subscribes it to the
channel of each thread somebody is watching (reference-counted), so any worker's publish reaches
every API process watching that thread. ``LocalHub`` (the embedded default: steps run in this
process) listens on the app's in-process ``EventBus``.

A subscription is a bounded queue. Notices are hints, never the record: a stream re-reads the
database on each notice, so a dropped notice (a full queue, a Redis reconnect) costs latency, never
a message. Overflow and reconnects put a ``resync`` notice in the queue to trigger that re-read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import queue
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from lunora_jobs.engine.events import EventBus
from lunora_jobs.engine.keys import thread_events_channel

log = logging.getLogger(__name__)

Event = dict[str, Any]
RESYNC: Event = {"type": "resync"}
QUEUE_SIZE = 1000


class Subscription:
    """Notices for one thread, delivered on the event loop that created it."""

    def __init__(self, thread_key: str, loop: asyncio.AbstractEventLoop) -> None:
        self.thread_key = thread_key
        self.loop = loop
        self.queue: asyncio.Queue[Event] = asyncio.Queue(QUEUE_SIZE)
        self.overflowed = False

    def push(self, event: Event) -> None:
        """Queue ``event`` (event-loop thread only); on overflow keep one ``resync`` instead."""
        if self.overflowed:
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.overflowed = True

    def push_threadsafe(self, event: Event) -> None:
        """``push`` from any thread."""
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody listens any more
            self.loop.call_soon_threadsafe(self.push, event)

    async def get(self, timeout: float) -> Event | None:
        """The next notice, or None after ``timeout`` seconds of quiet."""
        if self.overflowed and self.queue.empty():
            self.overflowed = False
            return dict(RESYNC)
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except TimeoutError:
            return None


class LiveHub(Protocol):
    """Hands out thread subscriptions."""

    async def start(self) -> None:
        """Connect (called at app startup)."""
        ...

    async def stop(self) -> None:
        """Disconnect (called at app shutdown)."""
        ...

    def subscribe(self, thread_key: str) -> contextlib.AbstractAsyncContextManager[Subscription]:
        """Subscribe to ``thread_key``; on entry, every later publish is delivered."""
        ...


class _Fanout:
    """Subscriptions by thread key."""

    def __init__(self) -> None:
        self.by_key: dict[str, set[Subscription]] = {}

    def add(self, sub: Subscription) -> bool:
        """Add; True when it is the first for its key."""
        subs = self.by_key.setdefault(sub.thread_key, set())
        subs.add(sub)
        return len(subs) == 1

    def remove(self, sub: Subscription) -> bool:
        """Remove; True when it was the last for its key."""
        subs = self.by_key.get(sub.thread_key)
        if subs is None:
            return False
        subs.discard(sub)
        if subs:
            return False
        del self.by_key[sub.thread_key]
        return True

    def deliver(self, event: Event) -> None:
        """To every subscription of the event's thread (event-loop thread only)."""
        for sub in list(self.by_key.get(str(event.get("thread_key")), ())):
            sub.push(event)

    def resync_all(self) -> None:
        """Tell every subscription to re-read (notices may have been lost)."""
        for subs in list(self.by_key.values()):
            for sub in list(subs):
                sub.push(dict(RESYNC))


class LocalHub:
    """In-process notices from the app's ``EventBus`` (the embedded mode)."""

    def __init__(self, bus: EventBus) -> None:
        self._bus = bus
        self._fanout = _Fanout()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsubscribe: Callable[[], None] | None = None

    async def start(self) -> None:
        """Listen on the bus."""
        self._loop = asyncio.get_running_loop()
        self._unsubscribe = self._bus.subscribe(self._on_event)

    async def stop(self) -> None:
        """Stop listening."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _on_event(self, event: Event) -> None:
        # Called from whichever thread ran the step: hop onto the loop.
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._fanout.deliver, dict(event))

    @contextlib.asynccontextmanager
    async def subscribe(self, thread_key: str) -> AsyncIterator[Subscription]:
        """Subscribe (in-process delivery needs no round trip)."""
        sub = Subscription(thread_key, asyncio.get_running_loop())
        self._fanout.add(sub)
        try:
            yield sub
        finally:
            self._fanout.remove(sub)


class RedisHub:
    """One Redis pub/sub connection per process, subscribed to the watched threads' channels.

    The connection lives in one reader thread (redis-py's blocking client, the same one the app
    publishes with): subscription changes are queued to that thread, messages hop onto the event
    loop. redis-py reconnects and resubscribes by itself; the streams then re-read the database.
    """

    def __init__(self, client: Any, *, prefix: str, tick_s: float = 0.1) -> None:
        self._client = client
        self._prefix = prefix
        self._tick_s = tick_s
        self._fanout = _Fanout()
        self._confirmed: dict[str, asyncio.Event] = {}
        self._ops: queue.SimpleQueue[tuple[str, str]] = queue.SimpleQueue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._thread_prefix = thread_events_channel(prefix, "")

    @classmethod
    def from_url(cls, url: str, *, prefix: str) -> RedisHub:
        """Connect with redis-py."""
        import redis

        return cls(redis.Redis.from_url(url), prefix=prefix)

    def channel(self, thread_key: str) -> str:
        """The Redis channel of a thread."""
        return thread_events_channel(self._prefix, thread_key)

    async def start(self) -> None:
        """Start the reader thread."""
        self._loop = asyncio.get_running_loop()
        self._stopping.clear()
        self._thread = threading.Thread(target=self._read, name="lunora-live-hub", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        """Stop the reader thread (it closes its connection)."""
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, thread.join, 5.0)

    @contextlib.asynccontextmanager
    async def subscribe(self, thread_key: str) -> AsyncIterator[Subscription]:
        """Subscribe; returns once Redis confirmed the channel (so no later publish is missed)."""
        sub = Subscription(thread_key, asyncio.get_running_loop())
        channel = self.channel(thread_key)
        if self._fanout.add(sub):
            confirmed = self._confirmed[channel] = asyncio.Event()
            self._ops.put(("subscribe", channel))
        else:
            confirmed = self._confirmed.get(channel) or asyncio.Event()
        try:
            with contextlib.suppress(TimeoutError):
                # Unconfirmed after 5 s (Redis trouble): go on; the stream's periodic re-read covers it.
                await asyncio.wait_for(confirmed.wait(), 5.0)
            yield sub
        finally:
            if self._fanout.remove(sub):
                self._confirmed.pop(channel, None)
                self._ops.put(("unsubscribe", channel))

    def _read(self) -> None:
        import redis

        pubsub = self._client.pubsub()
        try:
            pubsub.subscribe(f"{self._prefix}:events:api-hub")  # get_message needs a subscription
            while not self._stopping.is_set():
                try:
                    while True:
                        try:
                            op, channel = self._ops.get_nowait()
                        except queue.Empty:
                            break
                        getattr(pubsub, op)(channel)
                    message = pubsub.get_message(timeout=self._tick_s)
                except redis.RedisError:
                    log.warning("lunora api: live-update connection to Redis failed; retrying", exc_info=True)
                    self._stopping.wait(0.5)
                    self._call(self._fanout.resync_all)
                    continue
                if message is not None:
                    self._call(self._on_message, message)
        finally:
            with contextlib.suppress(Exception):
                pubsub.close()

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed
                loop.call_soon_threadsafe(fn, *args)

    def _on_message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        channel = message.get("channel")
        channel = channel.decode() if isinstance(channel, bytes) else str(channel)
        if kind == "subscribe":
            confirmed = self._confirmed.get(channel)
            if confirmed is not None and not confirmed.is_set():
                confirmed.set()
            elif channel.startswith(self._thread_prefix):
                # redis-py resubscribed after a reconnect: notices sent meanwhile are lost; re-read.
                self._fanout.deliver({**RESYNC, "thread_key": channel[len(self._thread_prefix):]})
        elif kind == "message":
            try:
                event = json.loads(message["data"])
            except (TypeError, ValueError):
                return
            if isinstance(event, dict):
                self._fanout.deliver(event)
