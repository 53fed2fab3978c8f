"""Delayed-run schedules of ``InMemoryStore`` (as ``sql._schedules``)."""

from __future__ import annotations

import threading
from dataclasses import replace

from lunora_jobs.store._codec import Clock, check_identity, dump, load, new_id
from lunora_jobs.store.records import JSON, ScheduleRecord


class MemorySchedulesMixin:
    """Schedule operations over the dict ``InMemoryStore`` owns."""

    clock: Clock
    _lock: threading.RLock
    _schedules: dict[str, ScheduleRecord]

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
