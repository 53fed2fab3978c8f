"""The run lock. It only saves work; correctness comes from the step ledger.

Two workers handed the same step (a redelivery, a sweep racing a slow worker) both reach the
database claim, and the claim picks one of them. ``Engine.execute`` therefore takes no lock on the
hot path any more: around a claim that is one conditional upsert, the lock cost two Redis round
trips a step and decided nothing the claim does not. It stays available (``deps.lock``) for work
that is not a single statement. If the lock is unavailable (Redis down, contention past ``wait_s``)
a holder proceeds without it: the ledger's unique ``(run_id, name)`` row and fenced completion decide.

The sweep takes it too, under the reserved id ``SWEEP_LOCK_ID`` (suffixed with a hash of the
database it sweeps: ``sweep.sweep_lock_id``), with ``wait_s=0`` and a short TTL, around one whole
pass: two overlapping ticks (two beats started by mistake, a slow sweep still running when the next
tick fires) then do not both scan every stalled run — the second one returns at once. This is the
lock "saving work" where the ledger alone would only dedupe (each re-dispatch would still cost a
task and a claim). ``contended`` tells a busy lock from an unavailable one: when Redis cannot be
reached the sweep runs anyway, because it is the recovery path for lost messages.

``LocalLock`` serves one process (the embedded default and tests); ``RedisLock`` uses redis-py's
``Lock`` (``SET NX PX`` to take, a token-checked Lua script to release: one round trip each).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, Protocol, runtime_checkable

from lunora_jobs.engine.keys import DEFAULT_PREFIX, run_lock_key

SWEEP_LOCK_ID = "~sweep"
"""The lock id (prefix) one sweep pass holds (not a run id: run ids never start with ``~``)."""


@runtime_checkable
class RunLock(Protocol):
    """A per-run mutual exclusion hint."""

    def hold(self, run_id: str, *, ttl_ms: int, wait_s: float) -> AbstractContextManager[bool]:
        """Context manager yielding True when the lock is held, False when it could not be taken."""
        ...


class LocalLock:
    """A process-local lock per run id (``threading.Lock`` objects, created on demand).

    Example::

        lock = LocalLock()
        with lock.hold("run-1", ttl_ms=30_000, wait_s=1.0) as held:
            ...
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._users: dict[str, int] = {}

    @contextmanager
    def hold(self, run_id: str, *, ttl_ms: int, wait_s: float) -> Iterator[bool]:
        """Hold the run's lock for the ``with`` body (``ttl_ms`` is moot in one process)."""
        with self._guard:
            lock = self._locks.setdefault(run_id, threading.Lock())
            self._users[run_id] = self._users.get(run_id, 0) + 1
        held = lock.acquire(timeout=wait_s)
        try:
            yield held
        finally:
            if held:
                lock.release()
            with self._guard:
                # Drop the entry when nobody uses it, so a long-lived process does not grow forever.
                self._users[run_id] -= 1
                if self._users[run_id] == 0:
                    del self._users[run_id]
                    del self._locks[run_id]


class RedisLock:
    """A per-run lock in Redis, via ``redis.Redis.lock`` (expires after ``ttl_ms`` if its holder dies).

    Example::

        lock = RedisLock.from_url("redis://127.0.0.1:6379/0", prefix="myapp")
    """

    def __init__(self, client: Any, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = prefix

    @classmethod
    def from_url(cls, url: str, *, prefix: str = DEFAULT_PREFIX) -> RedisLock:
        """Connect with redis-py (connections are pooled and opened lazily)."""
        import redis

        return cls(redis.Redis.from_url(url), prefix=prefix)

    @contextmanager
    def hold(self, run_id: str, *, ttl_ms: int, wait_s: float) -> Iterator[bool]:
        """Hold ``<prefix>:lock:run:<run_id>``; yield False (and carry on) if Redis fails or is contended."""
        import redis

        lock = self.client.lock(
            run_lock_key(self.prefix, run_id), timeout=max(ttl_ms, 1) / 1000.0,
            blocking_timeout=wait_s, thread_local=False,
        )
        try:
            held = bool(lock.acquire())
        except redis.RedisError:
            held = False
        try:
            yield held
        finally:
            if held:
                # Expired or Redis gone: the TTL cleans up, the ledger stays right.
                with suppress(redis.exceptions.LockError, redis.RedisError):
                    lock.release()


def contended(lock: RunLock, run_id: str) -> bool:
    """After ``hold`` yielded False: is another holder the reason (True), or was the lock service
    unreachable (False: carry on without it)? One extra Redis read for ``RedisLock``, asked only then."""
    if isinstance(lock, RedisLock):
        import redis

        try:
            return bool(lock.client.exists(run_lock_key(lock.prefix, run_id)))
        except redis.RedisError:
            return False
    return True  # an in-process lock cannot be unreachable
