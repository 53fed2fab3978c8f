"""Retention of ``InMemoryStore`` (as ``sql._retention``): erase a thread, purge old ledger rows."""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Any

from lunora_jobs.store.records import (
    MessageRecord,
    OutboxEntry,
    RunRecord,
    ScheduleRecord,
    StepRecord,
    ThreadRecord,
    UsageEntry,
)


class MemoryRetentionMixin:
    """``erase_thread`` and ``purge_ledger`` over the dicts ``InMemoryStore`` owns."""

    _lock: threading.RLock
    _threads: dict[str, ThreadRecord]
    _messages: dict[str, list[MessageRecord]]
    _runs: dict[str, RunRecord]
    _steps: dict[tuple[str, str], StepRecord]
    _outbox: dict[tuple[str, str], OutboxEntry]
    _tool_calls: dict[tuple[str, str], dict[str, Any]]
    _schedules: dict[str, ScheduleRecord]
    _usage: list[UsageEntry]

    def delete_thread(self, thread_id: str) -> None: ...  # pragma: no cover - InMemoryStore's

    def erase_thread(self, key: str) -> dict[str, int] | None:
        """Delete the thread ``key`` and every row that belongs to it; per-table counts, None if absent."""
        with self._lock:
            thread = next((t for t in self._threads.values() if t.key == key), None)
            if thread is None:
                return None
            run_ids = {r.id for r in self._runs.values() if r.thread_id == thread.id}
            mine = [u for u in self._usage if u.thread_id == thread.id or u.run_id in run_ids]
            self._usage = [u for u in self._usage if u not in mine]
            doomed = [s.id for s in self._schedules.values() if s.kind != "cron" and (
                s.run_id in run_ids or (isinstance(s.payload, dict) and s.payload.get("thread_key") == key))]
            for sid in doomed:
                del self._schedules[sid]
            counts = {
                "agent_threads": 1,
                "agent_messages": len(self._messages.get(thread.id, [])),
                "agent_runs": len(run_ids),
                "agent_steps": sum(1 for k in self._steps if k[0] in run_ids),
                "agent_outbox": sum(1 for k in self._outbox if k[0] in run_ids),
                "agent_tool_calls": sum(1 for c in self._tool_calls.values() if c["thread_id"] == thread.id),
                "agent_token_usage": len(mine),
                "agent_schedules": len(doomed),
            }
            self.delete_thread(thread.id)
            return counts

    def purge_ledger(self, before_ms: int, limit: int, statuses: Collection[str]) -> int:
        """Delete up to ``limit`` step rows of runs in ``statuses`` last updated before ``before_ms``."""
        with self._lock:
            old = {r.id for r in self._runs.values() if r.status in statuses and r.updated_at < before_ms}
            batch = [k for k, s in self._steps.items() if k[0] in old and s.updated_at < before_ms]
            batch = batch[: max(0, limit)]
            for k in batch:
                del self._steps[k]
            return len(batch)
