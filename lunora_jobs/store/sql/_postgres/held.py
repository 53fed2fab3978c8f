"""``HeldConnections``: the hot path's PostgreSQL connections, each held by its thread in autocommit.

Every step makes two ``autocommit_pipeline`` calls (its claim, its completion). Checking a connection
out of SQLAlchemy's pool and back in (the fairy, the pool events, the reset on return) and switching
autocommit on and off again cost about 0.1 ms of Python per call: measured side by side in one
process, a tenth of a step's CPU (``bench/hotpath.py``). So a thread keeps one connection for those
calls:

- made by the engine's own pool and dialect (``raw_connection()``, then ``detach()``, SQLAlchemy's
  public way to take a connection out of its pool), so it adapts types exactly as pooled ones do;
- in autocommit for good (it never runs anything else);
- checked before each use the way the pool pre-pings (``PollingPsycopgDialect.do_ping``: a poll of
  its socket, a real ping only when the socket has something, e.g. after a database restart);
- closed and forgotten when a call on it fails with a disconnect or leaves it anywhere but idle (an
  interrupted statement, a time limit raised mid-query): the next call opens a fresh one.

At most ``HELD_MAX`` threads per store hold one: a Celery worker child runs its steps on one thread,
while a thread pool (an API server's) would otherwise multiply the connections; any other thread
checks out of the pool as before. A held connection is closed when its thread ends and by
``close()``. A forked child forgets its parent's without closing them (psycopg never closes a
connection from a process other than the one that opened it).
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from typing import Any

from sqlalchemy.engine import Engine

HELD_MAX = 2
"""Threads per store that may hold a connection: a worker child's step thread, and one more (an API
process's threads start runs through the same calls; the lease keeper does not use them)."""


class HeldConnections:
    """One autocommit psycopg connection per thread (at most ``limit`` threads) for one engine."""

    def __init__(self, engine: Engine, limit: int = HELD_MAX) -> None:
        self._engine = engine
        self._limit = limit
        self._lock = threading.Lock()
        self._local = threading.local()
        # thread ident -> its connection (None while it connects), for close() and the limit
        self._held: dict[int, Any] = {}
        self._closed = False
        forget = weakref.WeakMethod(self._forget_parents)
        os.register_at_fork(after_in_child=lambda: (method := forget()) is not None and method())

    def connection(self) -> Any | None:
        """The calling thread's connection, opened (or re-opened) as needed; None when this thread
        holds none and ``limit`` threads already do, or after ``close()``. Raises what the pool's
        connect raises when the database cannot be reached."""
        raw: Any = getattr(self._local, "raw", None)
        if raw is not None:
            if self._usable(raw):
                return raw
            self.discard(raw)
        thread = threading.current_thread()
        ident = thread.ident or 0
        with self._lock:
            if self._closed or len(self._held) >= self._limit:
                return None
            self._held[ident] = None  # the slot is taken; the connect runs outside the lock
        try:
            raw = self._open()
        except BaseException:
            with self._lock:
                self._held.pop(ident, None)
            raise
        with self._lock:
            if self._closed or ident not in self._held:  # close() ran while it connected
                _close_quietly(raw)
                return None
            self._held[ident] = raw
        self._local.raw = raw
        self._local.finalizer = weakref.finalize(thread, self._thread_ended, ident, raw, os.getpid())
        return raw

    def _open(self) -> Any:
        # A thread connecting (slow, or hanging on an unreachable server) holds up no other thread.
        fairy = self._engine.raw_connection()
        raw: Any = fairy.driver_connection
        fairy.detach()
        try:
            raw.autocommit = True
        except BaseException:
            raw.close()
            raise
        return raw

    def discard(self, raw: Any) -> None:
        """Close the calling thread's connection ``raw`` (broken, or not idle) and forget it."""
        if getattr(self._local, "raw", None) is raw:
            self._local.raw = None
            self._local.finalizer.detach()  # it would keep the closed connection until the thread ends
        self._thread_ended(threading.get_ident(), raw, os.getpid())

    def close(self) -> None:
        """Close every held connection; later calls get None (the store is closing)."""
        with self._lock:
            self._closed = True
            held, self._held = [raw for raw in self._held.values() if raw is not None], {}
        for raw in held:
            _close_quietly(raw)

    def _usable(self, raw: Any) -> bool:
        try:
            return bool(self._engine.dialect.do_ping(raw))
        except Exception:  # a failed ping is the answer, whatever the driver raised
            return False

    def _thread_ended(self, ident: int, raw: Any, opener: int) -> None:
        with self._lock:
            if self._held.get(ident) is raw:
                del self._held[ident]
        if os.getpid() == opener:  # never close the socket a parent process still uses
            _close_quietly(raw)

    def _forget_parents(self) -> None:
        # In a forked child: the parent's connections are the parent's; the lock may have been held
        # by a thread that does not exist here.
        self._lock = threading.Lock()
        self._local = threading.local()
        self._held = {}


def _close_quietly(raw: Any) -> None:
    with contextlib.suppress(Exception):  # closing a dead connection may fail; it is gone either way
        raw.close()
