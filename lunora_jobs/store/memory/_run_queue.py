"""The per-thread run queue of ``InMemoryStore`` (as ``sql._run_queue``)."""

from __future__ import annotations

import threading


class MemoryRunQueueMixin:
    """The run queue over the list ``InMemoryStore`` owns."""

    _lock: threading.RLock

    def _init_run_queue(self) -> None:
        self._queue: list[tuple[str, str]] = []  # (thread_id, run_id) in arrival order

    def enqueue_run(self, thread_id: str, run_id: str) -> None:
        """Append ``run_id`` to the thread's queue (idempotent)."""
        with self._lock:
            if all(r != run_id for _, r in self._queue):
                self._queue.append((thread_id, run_id))

    def queued_runs(self, thread_id: str, limit: int = 100) -> list[str]:
        """The thread's queued run ids in arrival order."""
        with self._lock:
            return [r for t, r in self._queue if t == thread_id][:limit]

    def dequeue_run(self, thread_id: str, run_id: str) -> bool:
        """Remove ``run_id`` from the queue; True for the one caller that removed it."""
        with self._lock:
            if (thread_id, run_id) not in self._queue:
                return False
            self._queue.remove((thread_id, run_id))
            return True

    def queued_threads(self, limit: int = 100) -> list[str]:
        """Ids of threads with at least one queued run."""
        with self._lock:
            return sorted({t for t, _ in self._queue})[:limit]
