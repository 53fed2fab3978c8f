"""Delayed-run schedules over SQL.

``claim_due_schedules`` is a database claim: each due row is taken by a conditional UPDATE
(``WHERE status = 'pending'``), so two beats that tick at once never both get the same row.
"""

from __future__ import annotations

from functools import partial

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lunora_jobs.store._codec import check_identity, dump, new_id
from lunora_jobs.store.records import JSON, ScheduleRecord
from lunora_jobs.store.schema import schedules
from lunora_jobs.store.sql._base import SqlBase
from lunora_jobs.store.sql._rows import schedule_record


def _changed_one(conn: Connection, statement: sa.Update) -> bool:
    return bool(conn.execute(statement).rowcount == 1)


class SqlSchedulesMixin(SqlBase):
    """Delayed-run schedule operations of ``SqlStore``."""

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
