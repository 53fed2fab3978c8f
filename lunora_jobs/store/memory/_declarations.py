"""The agents live workers serve, in ``InMemoryStore`` (as ``sql/_declarations.py``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from lunora_jobs.store._codec import Clock, check_identity
from lunora_jobs.store.records import RunRecord, StepRecord


class MemoryDeclarationsMixin:
    """Agent declarations and the runs no live worker serves, over dicts."""

    clock: Clock
    _lock: threading.RLock
    _runs: dict[str, RunRecord]
    _steps: dict[tuple[str, str], StepRecord]

    def _init_declarations(self) -> None:
        self._declared: dict[str, int] = {}  # agent -> seen_at

    def declare_agents(self, agents: Sequence[str]) -> None:
        """Record that a live worker serves ``agents`` now."""
        for name in agents:
            check_identity("agent", name)
        with self._lock:
            now = self.clock()
            for name in agents:
                self._declared[name] = max(self._declared.get(name, now), now)

    def declared_agents(self, since: int) -> dict[str, int]:
        """Agent -> ``seen_at`` of the declarations seen at or after ``since``."""
        with self._lock:
            return {name: seen for name, seen in self._declared.items() if seen >= since}

    def undeclared_runs(self, before: int, live_since: int, *, limit: int) -> list[RunRecord]:
        """Running runs not updated since ``before``, never claimed, whose agent is not declared
        since ``live_since``; stalest first."""
        with self._lock:
            claimed = {run_id for run_id, _ in self._steps}
            found = [r for r in self._runs.values()
                     if r.status == "running" and r.updated_at <= before and r.id not in claimed
                     and self._declared.get(r.agent, -1) < live_since]
        found.sort(key=lambda r: (r.updated_at, r.id))
        return found[: max(limit, 0)]
