"""Tool calls and delayed-run schedules over SQL.

``upsert_tool_call`` inserts a call or updates the fields given (idempotent on ``(run_id, id)``).
``claim_due_schedules`` is a database claim: each due row is taken by a conditional UPDATE
(``WHERE status = 'pending'``), so two beats that tick at once never both get the same row.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lunora_jobs.store.codec import check_identity, dump, load, new_id
from lunora_jobs.store.records import JSON, ScheduleRecord, ToolCallRecord
from lunora_jobs.store.schema import schedules, tool_calls
from lunora_jobs.store.sql_base import SqlBase

TOOL_CALL_FIELDS = frozenset({"output", "status", "decision", "decided_by", "decided_at"})


def tool_call_record(row: Any) -> ToolCallRecord:
    """An ``agent_tool_calls`` row as a record."""
    m = row._mapping
    decided = m["decided_at"]
    return ToolCallRecord(
        id=m["id"],
        run_id=m["run_id"],
        thread_id=m["thread_id"],
        name=m["name"],
        input=load(m["input"]),
        output=load(m["output"]),
        status=m["status"],
        decision=m["decision"],
        decided_by=m["decided_by"],
        decided_at=None if decided is None else int(decided),
        created_at=int(m["created_at"]),
        updated_at=int(m["updated_at"]),
    )


def schedule_record(row: Any) -> ScheduleRecord:
    """An ``agent_schedules`` row as a record."""
    m = row._mapping
    claimed = m["claimed_at"]
    return ScheduleRecord(
        id=m["id"],
        agent=m["agent"],
        run_at=int(m["run_at"]),
        payload=load(m["payload"]),
        status=m["status"],
        claimed_by=m["claimed_by"],
        claimed_at=None if claimed is None else int(claimed),
        created_at=int(m["created_at"]),
    )


def tool_call_changes(fields: dict[str, Any]) -> dict[str, Any]:
    """Validated column values of a tool-call upsert (``output`` is JSON)."""
    unknown = set(fields) - TOOL_CALL_FIELDS
    if unknown:
        raise ValueError(
            f"cannot set tool call field(s) {sorted(unknown)}; allowed: {sorted(TOOL_CALL_FIELDS)}"
        )
    check_identity("decided_by", fields.get("decided_by"))
    return {k: dump(v) if k == "output" else v for k, v in fields.items()}


def _changed_one(conn: Connection, statement: sa.Update) -> bool:
    return bool(conn.execute(statement).rowcount == 1)


class SqlExtrasMixin(SqlBase):
    """Tool-call and schedule operations of ``SqlStore``."""

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

    def add_schedule(
        self, agent: str, run_at: int, payload: JSON = None, *, id: str | None = None
    ) -> ScheduleRecord:
        """Queue a delayed run (idempotent on ``id`` when given)."""
        check_identity("agent", agent)
        sid = id or new_id()
        check_identity("schedule id", sid)
        row = {
            "id": sid,
            "agent": agent,
            "run_at": run_at,
            "payload": dump(payload),
            "status": "pending",
            "claimed_by": None,
            "claimed_at": None,
            "created_at": self.clock(),
        }
        self._write(lambda conn: conn.execute(self._insert_ignore(schedules, [row], ["id"])))
        with self._read() as conn:
            return schedule_record(conn.execute(sa.select(schedules).where(schedules.c.id == sid)).one())

    def claim_due_schedules(self, now: int, limit: int, claimer: str) -> list[ScheduleRecord]:
        """Claim up to ``limit`` pending schedules due at ``now``; each row goes to one caller only."""
        check_identity("claimer", claimer)
        due = (
            sa.select(schedules.c.id)
            .where(schedules.c.status == "pending", schedules.c.run_at <= now)
            .order_by(schedules.c.run_at, schedules.c.id)
            .limit(limit)
        )
        with self._read() as conn:
            candidates = [str(r[0]) for r in conn.execute(due)]
        claimed: list[str] = []
        for sid in candidates:
            stmt = (
                sa.update(schedules)
                .where(schedules.c.id == sid, schedules.c.status == "pending")
                .values(status="claimed", claimed_by=claimer, claimed_at=now)
            )
            if self._write(partial(_changed_one, statement=stmt)):
                claimed.append(sid)
        if not claimed:
            return []
        with self._read() as conn:
            rows = conn.execute(
                sa.select(schedules).where(schedules.c.id.in_(claimed)).order_by(schedules.c.run_at)
            )
            return [schedule_record(r) for r in rows]
