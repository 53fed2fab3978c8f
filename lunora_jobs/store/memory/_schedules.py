"""Schedules of ``InMemoryStore`` (as ``sql._schedules``: claims under a lease, fenced fire records)."""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import replace

from lunora_jobs.store._codec import Clock, check_identity, dump, load, new_id
from lunora_jobs.store.base import SCHEDULE_LEASE_MS
from lunora_jobs.store.records import JSON, ScheduleRecord

CLAIMABLE = ("pending", "claimed")


class MemorySchedulesMixin:
    """Schedule operations over the dict ``InMemoryStore`` owns."""

    clock: Clock
    _lock: threading.RLock
    _schedules: dict[str, ScheduleRecord]

    def add_schedule(
        self, agent: str, run_at: int, payload: JSON = None, *, id: str | None = None, kind: str = "once"
    ) -> ScheduleRecord:
        """Queue a delayed run or a cron entry's first fire at ``run_at`` (idempotent on ``id``)."""
        check_identity("agent", agent)
        sid = id or new_id()
        check_identity("schedule id", sid)
        with self._lock:
            if sid not in self._schedules:
                self._schedules[sid] = ScheduleRecord(
                    sid, agent, run_at, load(dump(payload)), "pending", None, None, self.clock(),
                    kind=kind, due_at=run_at,
                )
            return self._schedules[sid]

    def claim_due_schedules(
        self, now: int, limit: int, claimer: str, *, lease_ms: int = SCHEDULE_LEASE_MS
    ) -> list[ScheduleRecord]:
        """Claim up to ``limit`` due schedules (pending, or claimed with an expired lease)."""
        check_identity("claimer", claimer)
        with self._lock:
            due = sorted(
                (s for s in self._schedules.values() if s.status in CLAIMABLE and s.run_at <= now),
                key=lambda s: (s.run_at, s.id),
            )[: max(0, limit)]
            claimed = [
                replace(s, status="claimed", claimed_by=claimer, claimed_at=now, run_at=now + lease_ms,
                        attempts=s.attempts + 1)
                for s in due
            ]
            self._schedules.update({s.id: s for s in claimed})
            return sorted(claimed, key=lambda s: (s.due_at or 0, s.id))

    def finish_schedule(
        self, id: str, *, claimed_by: str, claimed_at: int, status: str, run_id: str | None = None,
        next_due: int | None = None, error: str | None = None,
    ) -> bool:
        """Record a fire (or failure) under this claim; ``next_due``: pending again then (cron)."""
        with self._lock:
            s = self._schedules.get(id)
            if s is None or (s.status, s.claimed_by, s.claimed_at) != ("claimed", claimed_by, claimed_at):
                return False
            s = replace(s, status=status, last_error=error)
            if run_id is not None:
                s = replace(s, run_id=run_id, fired_at=self.clock())
            if next_due is not None:
                s = replace(s, status="pending", due_at=next_due, run_at=next_due, attempts=0)
            self._schedules[id] = s
            return True

    def cancel_schedule(self, id: str) -> bool:
        """Cancel a pending schedule; False when it is not pending."""
        with self._lock:
            s = self._schedules.get(id)
            if s is None or s.status != "pending":
                return False
            self._schedules[id] = replace(s, status="cancelled")
            return True

    def reset_schedule(
        self, id: str, *, due_at: int, payload: JSON, from_statuses: Collection[str]
    ) -> bool:
        """Pending again at ``due_at`` with ``payload``, only from one of ``from_statuses``."""
        with self._lock:
            s = self._schedules.get(id)
            if s is None or s.status not in from_statuses:
                return False
            self._schedules[id] = replace(
                s, status="pending", due_at=due_at, run_at=due_at, payload=load(dump(payload)), attempts=0,
                last_error=None, claimed_by=None, claimed_at=None,
            )
            return True

    def get_schedule(self, id: str) -> ScheduleRecord | None:
        """The schedule, or None."""
        with self._lock:
            return self._schedules.get(id)

    def list_schedules(
        self, *, status: str | None = None, agent: str | None = None, limit: int = 100
    ) -> list[ScheduleRecord]:
        """Schedules by ``run_at`` then id, optionally one status's or one agent's."""
        with self._lock:
            rows = [
                s for s in self._schedules.values()
                if (status is None or s.status == status) and (agent is None or s.agent == agent)
            ]
        return sorted(rows, key=lambda s: (s.run_at, s.id))[: max(0, limit)]
