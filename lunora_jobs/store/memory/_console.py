"""The console's reads in memory (the twin of ``sql/_console.py``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from lunora_jobs.store.records import (
    MessageRecord,
    ModelUsage,
    RunListing,
    RunRecord,
    ThreadRecord,
    UsageEntry,
)


class MemoryConsoleMixin:
    """Console reads of ``InMemoryStore``."""

    _lock: threading.RLock
    _runs: dict[str, RunRecord]
    _threads: dict[str, ThreadRecord]
    _usage: list[UsageEntry]

    def list_messages(self, thread_id: str) -> list[MessageRecord]:  # provided by the store
        raise NotImplementedError

    def list_messages_after(self, thread_id: str, after_seq: int, limit: int) -> list[MessageRecord]:
        """Up to ``limit`` messages with ``seq > after_seq``, by seq."""
        return [m for m in self.list_messages(thread_id) if m.seq > after_seq][: max(limit, 0)]

    def page_runs(
        self, *, owner: str | None = None, status: str | None = None, agent: str | None = None,
        thread_id: str | None = None, before: tuple[int, str] | None = None, limit: int = 50,
    ) -> list[RunListing]:
        """Runs newest first, filtered, keyset-paged after ``before`` = (created_at, id)."""
        with self._lock:
            found = [
                r for r in self._runs.values()
                if (owner is None or r.owner == owner) and (status is None or r.status == status)
                and (agent is None or r.agent == agent) and (thread_id is None or r.thread_id == thread_id)
                and (before is None or (r.created_at, r.id) < before)
            ]
            keys = {t.id: t.key for t in self._threads.values()}
        found.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        return [
            RunListing(r.id, keys.get(r.thread_id, ""), r.agent, r.owner, r.status, r.stopped, r.turns,
                       r.input_tokens, r.output_tokens, r.created_at, r.updated_at)
            for r in found[: max(limit, 0)]
        ]

    def usage_by_model(self, run_ids: Sequence[str]) -> list[ModelUsage]:
        """Each run's usage per model."""
        wanted = set(run_ids)
        totals: dict[tuple[str, str], ModelUsage] = {}
        with self._lock:
            for e in self._usage:
                if e.run_id is None or e.run_id not in wanted:
                    continue
                key = (e.run_id, e.model or "")
                was = totals.get(key) or ModelUsage(e.run_id, e.model, 0, 0, 0, 0, None)
                cost = was.cost_usd if e.cost_usd is None else (was.cost_usd or 0.0) + e.cost_usd
                totals[key] = ModelUsage(
                    e.run_id, e.model, was.input_tokens + e.input_tokens,
                    was.output_tokens + e.output_tokens, was.cache_read_tokens + e.cache_read_tokens,
                    was.cache_write_tokens + e.cache_write_tokens, cost,
                )
        return [totals[key] for key in sorted(totals)]
