"""Tool calls over SQL: idempotent upserts, reads, and the first-wins approval decision.

``upsert_tool_call`` inserts a call or updates the fields given (idempotent on ``(run_id, id)``).
``decide_tool_call`` records a human decision once (``WHERE decision IS NULL``); the row that comes
back carries the winning decision, so a caller sees whether it agreed.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store._codec import check_identity, dump
from lunora_jobs.store._rules import AWAITING_APPROVAL, check_decision, tool_call_changes
from lunora_jobs.store.records import JSON, ToolCallRecord
from lunora_jobs.store.schema import tool_calls
from lunora_jobs.store.sql._base import SqlBase
from lunora_jobs.store.sql._rows import tool_call_record


class SqlToolCallsMixin(SqlBase):
    """Tool-call operations of ``SqlStore``."""

    def upsert_tool_call(
        self, thread_id: str, run_id: str, call_id: str, *, name: str, input: JSON = None, **fields: Any
    ) -> ToolCallRecord:
        """Insert the call, or update ``fields`` (output, status, decision, decided_by, decided_at)."""
        check_identity("tool call id", call_id)
        changes = tool_call_changes(fields)
        now = self.clock()
        row = {
            "thread_id": thread_id,
            "run_id": run_id,
            "id": call_id,
            "name": name,
            "input": dump(input),
            "status": "pending",
            "created_at": now,
            "updated_at": now,
            **changes,
        }
        stmt = self._insert(tool_calls).values(row)
        update = {**changes, "updated_at": now}
        if self.dialect == "mysql":
            stmt = stmt.on_duplicate_key_update(update)
        else:
            stmt = stmt.on_conflict_do_update(index_elements=["run_id", "id"], set_=update)
        self._write(lambda conn: conn.execute(stmt))
        found = self.get_tool_call(run_id, call_id)
        assert found is not None
        return found

    def get_tool_call(self, run_id: str, call_id: str) -> ToolCallRecord | None:
        """The tool call, or None."""
        query = sa.select(tool_calls).where(tool_calls.c.run_id == run_id, tool_calls.c.id == call_id)
        with self._read() as conn:
            row = conn.execute(query).first()
        return None if row is None else tool_call_record(row)

    def list_tool_calls(self, run_id: str) -> list[ToolCallRecord]:
        """The run's tool calls, oldest first."""
        query = (
            sa.select(tool_calls)
            .where(tool_calls.c.run_id == run_id)
            .order_by(tool_calls.c.created_at, tool_calls.c.id)
        )
        with self._read() as conn:
            return [tool_call_record(row) for row in conn.execute(query)]

    def decide_tool_call(
        self, run_id: str, call_id: str, *, decision: str, decided_by: str | None = None
    ) -> ToolCallRecord:
        """Record ``decision`` on a call awaiting approval, unless one is already recorded.

        Returns the call as it now stands: its ``decision`` is the first one ever recorded.
        Raises ``NotFoundError`` when the run has no such call.
        """
        check_decision(decision)
        check_identity("decided_by", decided_by)
        now = self.clock()
        stmt = (
            sa.update(tool_calls)
            .where(
                tool_calls.c.run_id == run_id,
                tool_calls.c.id == call_id,
                tool_calls.c.decision.is_(None),
                tool_calls.c.status == AWAITING_APPROVAL,
            )
            .values(decision=decision, decided_by=decided_by, decided_at=now, status=decision, updated_at=now)
        )
        query = sa.select(tool_calls).where(tool_calls.c.run_id == run_id, tool_calls.c.id == call_id)

        def work(conn: Connection) -> ToolCallRecord:
            conn.execute(stmt)
            row = conn.execute(query).first()
            if row is None:
                raise NotFoundError(f"run {run_id!r} has no tool call {call_id!r} awaiting approval")
            return tool_call_record(row)

        return self._write(work)
