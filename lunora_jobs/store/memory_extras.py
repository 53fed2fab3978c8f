"""Tool calls and delayed-run schedules of ``InMemoryStore`` (same semantics as ``sql_extras``)."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from lunora_jobs.store.codec import Clock, check_identity, dump, load, new_id
from lunora_jobs.store.records import JSON, ScheduleRecord, ToolCallRecord
from lunora_jobs.store.sql_extras import tool_call_changes


class MemoryExtrasMixin:
    """Tool-call and schedule operations over the dicts ``InMemoryStore`` owns."""

    clock: Clock
    _lock: threading.RLock
    _tool_calls: dict[tuple[str, str], dict[str, Any]]
    _schedules: dict[str, ScheduleRecord]

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

    def add_schedule(
        self, agent: str, run_at: int, payload: JSON = None, *, id: str | None = None
    ) -> ScheduleRecord:
        """Queue a delayed run (idempotent on ``id`` when given)."""
        check_identity("agent", agent)
        sid = id or new_id()
        check_identity("schedule id", sid)
        with self._lock:
            if sid not in self._schedules:
                record = ScheduleRecord(
                    sid, agent, run_at, load(dump(payload)), "pending", None, None, self.clock()
                )
                self._schedules[sid] = record
            return self._schedules[sid]

    def claim_due_schedules(self, now: int, limit: int, claimer: str) -> list[ScheduleRecord]:
        """Claim up to ``limit`` pending schedules due at ``now``."""
        check_identity("claimer", claimer)
        with self._lock:
            due = sorted(
                (s for s in self._schedules.values() if s.status == "pending" and s.run_at <= now),
                key=lambda s: (s.run_at, s.id),
            )[: max(0, limit)]
            claimed = [replace(s, status="claimed", claimed_by=claimer, claimed_at=now) for s in due]
            self._schedules.update({s.id: s for s in claimed})
            return claimed


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
