"""Run transitions, approval decisions and the run queue of ``InMemoryStore`` (as ``sql_hitl``)."""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Any

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store.codec import Clock, check_identity
from lunora_jobs.store.memory_extras import _tool_call
from lunora_jobs.store.records import RunRecord, ToolCallRecord
from lunora_jobs.store.sql_hitl import AWAITING_APPROVAL, check_decision


class MemoryHitlMixin:
    """The ``sql_hitl`` operations over the dicts ``InMemoryStore`` owns."""

    clock: Clock
    _lock: threading.RLock
    _runs: dict[str, RunRecord]
    _tool_calls: dict[tuple[str, str], dict[str, Any]]

    def _init_hitl(self) -> None:
        self._queue: list[tuple[str, str]] = []  # (thread_id, run_id) in arrival order

    def _patch_run(self, run_id: str, fields: dict[str, Any], now: int) -> None:
        raise NotImplementedError

    def transition_run(self, run_id: str, from_statuses: Collection[str], **fields: Any) -> bool:
        """Apply ``fields`` only while the run's status is one of ``from_statuses``."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.status not in from_statuses:
                return False
            self._patch_run(run_id, fields, self.clock())
            return True

    def decide_tool_call(
        self, run_id: str, call_id: str, *, decision: str, decided_by: str | None = None
    ) -> ToolCallRecord:
        """Record ``decision`` unless one is recorded; return the call with the first decision."""
        check_decision(decision)
        check_identity("decided_by", decided_by)
        with self._lock:
            row = self._tool_calls.get((run_id, call_id))
            if row is None:
                raise NotFoundError(f"run {run_id!r} has no tool call {call_id!r} awaiting approval")
            if row["decision"] is None and row["status"] == AWAITING_APPROVAL:
                now = self.clock()
                row = {**row, "decision": decision, "decided_by": decided_by, "decided_at": now,
                       "status": decision, "updated_at": now}
                self._tool_calls[(run_id, call_id)] = row
            return _tool_call(row)

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
