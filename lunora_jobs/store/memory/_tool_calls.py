"""Tool calls of ``InMemoryStore``: upserts, reads and the first-wins approval decision
(as ``sql._tool_calls``)."""

from __future__ import annotations

import threading
from typing import Any

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store._codec import Clock, check_identity, dump, load
from lunora_jobs.store._rules import AWAITING_APPROVAL, check_decision, tool_call_changes
from lunora_jobs.store.records import JSON, ToolCallRecord


class MemoryToolCallsMixin:
    """Tool-call operations over the dict ``InMemoryStore`` owns."""

    clock: Clock
    _lock: threading.RLock
    _tool_calls: dict[tuple[str, str], dict[str, Any]]

    def upsert_tool_call(
        self, thread_id: str, run_id: str, call_id: str, *, name: str, input: JSON = None, **fields: Any
    ) -> ToolCallRecord:
        """Insert the call, or update ``fields`` (output, status, decision, decided_by, decided_at)."""
        check_identity("tool call id", call_id)
        changes = tool_call_changes(fields)
        with self._lock:
            now = self.clock()
            row = self._tool_calls.get((run_id, call_id))
            if row is None:
                row = {
                    "id": call_id,
                    "run_id": run_id,
                    "thread_id": thread_id,
                    "name": name,
                    "input": dump(input),
                    "output": None,
                    "status": "pending",
                    "decision": None,
                    "decided_by": None,
                    "decided_at": None,
                    "created_at": now,
                }
            row = {**row, **changes, "updated_at": now}
            self._tool_calls[(run_id, call_id)] = row
            return _tool_call(row)

    def get_tool_call(self, run_id: str, call_id: str) -> ToolCallRecord | None:
        """The tool call, or None."""
        with self._lock:
            row = self._tool_calls.get((run_id, call_id))
            return None if row is None else _tool_call(row)

    def list_tool_calls(self, run_id: str) -> list[ToolCallRecord]:
        """The run's tool calls, oldest first."""
        with self._lock:
            found = [_tool_call(r) for (rid, _), r in self._tool_calls.items() if rid == run_id]
        return sorted(found, key=lambda c: (c.created_at, c.id))

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


def _tool_call(row: dict[str, Any]) -> ToolCallRecord:
    return ToolCallRecord(
        id=row["id"],
        run_id=row["run_id"],
        thread_id=row["thread_id"],
        name=row["name"],
        input=load(row["input"]),
        output=load(row["output"]),
        status=row["status"],
        decision=row["decision"],
        decided_by=row["decided_by"],
        decided_at=row["decided_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )
