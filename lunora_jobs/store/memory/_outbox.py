"""The start's outbox of ``InMemoryStore`` (as ``sql/_outbox.py``); rows are added by ``create_run``."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from lunora_jobs.store.records import OutboxEntry


class MemoryOutboxMixin:
    """The outbox rows over the dict ``InMemoryStore`` owns."""

    _lock: threading.RLock
    _outbox: dict[tuple[str, str], OutboxEntry]

    def due_outbox(self, before: int, *, agents: Sequence[str], limit: int) -> list[OutboxEntry]:
        """Outbox rows of ``agents`` created at or before ``before``, oldest first, at most ``limit``."""
        with self._lock:
            found = [e for e in self._outbox.values() if e.agent in agents and e.created_at <= before]
        found.sort(key=lambda e: (e.created_at, e.run_id, e.step))
        return found[: max(limit, 0)]

    def clear_outbox(self, keys: Sequence[tuple[str, str]]) -> int:
        """Delete the outbox rows ``keys`` = (run_id, step) pairs; how many were there."""
        with self._lock:
            return sum(self._outbox.pop(key, None) is not None for key in keys)
