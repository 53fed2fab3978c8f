"""The sweep's reads in memory (the twin of ``sql/_sweep.py``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from lunora_jobs.store._rules import AWAITING_APPROVAL, LAPSABLE
from lunora_jobs.store.records import RunRecord, StepRecord


class MemorySweepMixin:
    """The sweep's reads of ``InMemoryStore``."""

    _lock: threading.RLock
    _runs: dict[str, RunRecord]
    _steps: dict[tuple[str, str], StepRecord]
    _tool_calls: dict[tuple[str, str], dict[str, Any]]

    def lapsed_steps(
        self, now: int, *, agents: Sequence[str], limit: int, after: tuple[int, str, str] | None = None,
    ) -> list[StepRecord]:
        """Running steps of running or parked runs of ``agents`` whose lease lapsed, oldest lapse
        first."""
        with self._lock:
            found = [
                s for s in self._steps.values()
                if s.status == "running" and 0 < s.lease_expires_at <= now
                and (run := self._runs.get(s.run_id)) is not None and run.status in LAPSABLE
                and run.agent in agents and (after is None or (s.lease_expires_at, s.run_id, s.name) > after)
            ]
        found.sort(key=lambda s: (s.lease_expires_at, s.run_id, s.name))
        return found[: max(limit, 0)]

    def quiet_runs(
        self, status: str, before: int, *, agents: Sequence[str], limit: int,
        after: tuple[int, str] | None = None,
    ) -> list[RunRecord]:
        """Runs of ``agents`` in ``status`` not updated since ``before``, stalest first."""
        with self._lock:
            found = [r for r in self._runs.values()
                     if r.status == status and r.updated_at <= before and r.agent in agents
                     and (after is None or (r.updated_at, r.id) > after)]
        found.sort(key=lambda r: (r.updated_at, r.id))
        return found[: max(limit, 0)]

    def parked_runs_to_wake(
        self, before: int, *, agents: Sequence[str], limit: int, after: tuple[int, str] | None = None,
    ) -> list[RunRecord]:
        """Parked runs with a decision recorded by ``before`` but not applied, or quiet since
        ``before`` with no call awaiting approval; stalest first."""
        with self._lock:
            found = [r for r in self._runs.values()
                     if r.status == "awaiting_input" and r.agent in agents
                     and (after is None or (r.updated_at, r.id) > after) and self._to_wake(r, before)]
        found.sort(key=lambda r: (r.updated_at, r.id))
        return found[: max(limit, 0)]

    def _to_wake(self, run: RunRecord, before: int) -> bool:
        calls = [c for (run_id, _), c in self._tool_calls.items() if run_id == run.id]
        for call in calls:
            step = self._steps.get((run.id, f"approval:{call['id']}"))
            decided = call.get("decision") is not None and (call.get("decided_at") or 0) <= before
            if decided and (step is None or step.status != "completed"):
                return True
        return run.updated_at <= before and all(c.get("status") != AWAITING_APPROVAL for c in calls)
