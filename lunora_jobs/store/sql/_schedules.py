"""Schedules over SQL: delayed runs and cron entries' next fires, claimed under a lease.

``claim_due_schedules`` is a database claim: each due row is taken by a conditional UPDATE fenced on
the status and ``run_at`` it was read with, so two beats that tick at once never both get the same
row. A claimed row's ``run_at`` is its lease's expiry: if its claimer dies before recording the fire,
the row comes due again and another claimer takes it over (the run it starts has an id derived from
the occurrence, so a takeover after a fire that did start the run starts nothing new).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lunora_jobs.store._codec import check_identity, dump, new_id
from lunora_jobs.store.base import SCHEDULE_LEASE_MS
from lunora_jobs.store.records import JSON, ScheduleRecord
from lunora_jobs.store.schema import schedules
from lunora_jobs.store.sql._base import SqlBase
from lunora_jobs.store.sql._rows import schedule_record

CLAIMABLE = ("pending", "claimed")


def _update_one(statement: sa.Update) -> Any:
    def work(conn: Connection) -> bool:
        return bool(conn.execute(statement).rowcount == 1)

    return work


class SqlSchedulesMixin(SqlBase):
    """Schedule operations of ``SqlStore``."""

    def add_schedule(
        self, agent: str, run_at: int, payload: JSON = None, *, id: str | None = None, kind: str = "once"
    ) -> ScheduleRecord:
        """Queue a delayed run or a cron entry's first fire at ``run_at`` (idempotent on ``id``)."""
        check_identity("agent", agent)
        sid = id or new_id()
        check_identity("schedule id", sid)
        row = {
            "id": sid, "agent": agent, "run_at": run_at, "due_at": run_at, "payload": dump(payload),
            "status": "pending", "kind": kind, "attempts": 0, "claimed_by": None, "claimed_at": None,
            "created_at": self.clock(),
        }
        self._write(lambda conn: conn.execute(self._insert_ignore(schedules, ["id"]), row), autocommit=True)
        found = self.get_schedule(sid)
        assert found is not None  # inserted or already there; schedules are never deleted
        return found

    def claim_due_schedules(
        self, now: int, limit: int, claimer: str, *, lease_ms: int = SCHEDULE_LEASE_MS
    ) -> list[ScheduleRecord]:
        """Claim up to ``limit`` due schedules (pending, or claimed with an expired lease)."""
        check_identity("claimer", claimer)
        due = (
            sa.select(schedules.c.id, schedules.c.status, schedules.c.run_at)
            .where(schedules.c.status.in_(CLAIMABLE), schedules.c.run_at <= now)
            .order_by(schedules.c.run_at, schedules.c.id)
            .limit(max(0, limit))
        )
        with self._read() as conn:
            candidates = [(str(r[0]), str(r[1]), int(r[2])) for r in conn.execute(due)]
        claimed: list[str] = []
        for sid, status, run_at in candidates:
            stmt = (
                sa.update(schedules)
                .where(schedules.c.id == sid, schedules.c.status == status, schedules.c.run_at == run_at)
                .values(
                    status="claimed", claimed_by=claimer, claimed_at=now, run_at=now + lease_ms,
                    attempts=schedules.c.attempts + 1,
                )
            )
            if self._write(_update_one(stmt), autocommit=True):
                claimed.append(sid)
        if not claimed:
            return []
        with self._read() as conn:
            rows = conn.execute(
                sa.select(schedules)
                .where(schedules.c.id.in_(claimed))
                .order_by(schedules.c.due_at, schedules.c.id)
            )
            return [schedule_record(r) for r in rows]

    def finish_schedule(
        self, id: str, *, claimed_by: str, claimed_at: int, status: str, run_id: str | None = None,
        next_due: int | None = None, error: str | None = None,
    ) -> bool:
        """Record a fire (or failure) under this claim; ``next_due``: pending again then (cron)."""
        values: dict[str, Any] = {"status": status, "last_error": error}
        if run_id is not None:
            values.update(run_id=run_id, fired_at=self.clock())
        if next_due is not None:
            values.update(status="pending", due_at=next_due, run_at=next_due, attempts=0)
        stmt = (
            sa.update(schedules)
            .where(
                schedules.c.id == id, schedules.c.status == "claimed",
                schedules.c.claimed_by == claimed_by, schedules.c.claimed_at == claimed_at,
            )
            .values(values)
        )
        return bool(self._write(_update_one(stmt), autocommit=True))

    def cancel_schedule(self, id: str) -> bool:
        """Cancel a pending schedule; False when it is not pending."""
        stmt = (
            sa.update(schedules)
            .where(schedules.c.id == id, schedules.c.status == "pending")
            .values(status="cancelled")
        )
        return bool(self._write(_update_one(stmt), autocommit=True))

    def reset_schedule(
        self, id: str, *, due_at: int, payload: JSON, from_statuses: Collection[str]
    ) -> bool:
        """Pending again at ``due_at`` with ``payload``, only from one of ``from_statuses``."""
        stmt = (
            sa.update(schedules)
            .where(schedules.c.id == id, schedules.c.status.in_(list(from_statuses)))
            .values(
                status="pending", due_at=due_at, run_at=due_at, payload=dump(payload), attempts=0,
                last_error=None, claimed_by=None, claimed_at=None,
            )
        )
        return bool(self._write(_update_one(stmt), autocommit=True))

    def get_schedule(self, id: str) -> ScheduleRecord | None:
        """The schedule, or None."""
        with self._read() as conn:
            row = conn.execute(sa.select(schedules).where(schedules.c.id == id)).first()
        return None if row is None else schedule_record(row)

    def list_schedules(
        self, *, status: str | None = None, agent: str | None = None, limit: int = 100
    ) -> list[ScheduleRecord]:
        """Schedules by ``run_at`` then id, optionally one status's or one agent's."""
        query = sa.select(schedules).order_by(schedules.c.run_at, schedules.c.id).limit(max(0, limit))
        if status is not None:
            query = query.where(schedules.c.status == status)
        if agent is not None:
            query = query.where(schedules.c.agent == agent)
        with self._read() as conn:
            return [schedule_record(r) for r in conn.execute(query)]
