"""``LocalMemoryRows``: the in-process twin of ``SqlMemoryRows`` for ``InMemoryStore`` (tests, the
harness): the same semantics, kept beside the store object it serves."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from lunora_jobs.store.base import AgentStore


@dataclass(frozen=True, slots=True)
class _Episode:
    created_at: int
    run_id: str
    summary: str


class LocalMemoryRows:
    """``MemoryRows`` in process memory, over an ``AgentStore`` without SQL (its ledger for the sweep)."""

    def __init__(self, store: AgentStore) -> None:
        self.store = store
        self._episodes: dict[str, list[_Episode]] = {}
        self._lock = threading.Lock()

    def add_episode(
        self, owner: str, run_id: str, summary: str, *, now: int, max_episodes: int, ttl_ms: int | None
    ) -> bool:
        """Insert once per run, then prune like the SQL twin (TTL, then the oldest beyond the cap)."""
        with self._lock:
            known = any(e.run_id == run_id for rows in self._episodes.values() for e in rows)
            rows = self._episodes.setdefault(owner, [])
            if not known:
                rows.append(_Episode(now, run_id, summary))
            if ttl_ms is not None:
                rows[:] = [e for e in rows if e.created_at >= now - ttl_ms]
            rows.sort(key=lambda e: (e.created_at, e.run_id))
            del rows[: max(0, len(rows) - max_episodes)]
            return not known

    def recent_episodes(self, owner: str, limit: int, *, now: int, ttl_ms: int | None) -> list[str]:
        """The newest ``limit``, oldest first."""
        with self._lock:
            rows = sorted(self._episodes.get(owner, []), key=lambda e: (e.created_at, e.run_id))
        if ttl_ms is not None:
            rows = [e for e in rows if e.created_at >= now - ttl_ms]
        return [e.summary for e in rows[-limit:]]

    def count_episodes(self, owner: str) -> int:
        """How many the owner has."""
        with self._lock:
            return len(self._episodes.get(owner, []))

    def stalled_writes(self, names: Sequence[str], now: int, limit: int) -> list[tuple[str, str]]:
        """A scan of the in-memory ledger (small by nature)."""
        wanted = set(names)
        found = [
            (step.run_id, step.name)
            for run in self.store.list_runs()
            for step in self.store.list_steps(run.id)
            if step.name in wanted and step.status == "running" and step.lease_expires_at < now
        ]
        return found[:limit]
