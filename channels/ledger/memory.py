"""The inbound ledger in process memory, beside an ``InMemoryStore`` (tests, scratch apps)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from channels.ledger.base import CLAIM_STALE_MS, Claim, PendingReply
from lunora_jobs.store import InMemoryStore

_TERMINAL = ("completed", "failed", "cancelled")


@dataclass(slots=True)
class _Row:
    run_id: str
    agent: str
    status: str
    reply: dict[str, Any] | None
    reply_status: str
    updated_at: int


class MemoryInboundLedger:
    """``InboundLedger`` in a dict under one lock (the semantics of ``SqlInboundLedger``)."""

    def __init__(self, store: InMemoryStore) -> None:
        self.store = store
        self._rows: dict[str, _Row] = {}
        self._lock = threading.Lock()

    def claim(self, key: str, *, channel: str, agent: str, run_id: str, reply: dict[str, Any] | None,
              now: int) -> Claim:
        """Insert, or report the duplicate, or retake a stale claim."""
        with self._lock:
            row = self._rows.get(key)
            if row is None:
                self._rows[key] = _Row(run_id, agent, "claimed", copy.deepcopy(reply),
                                       "pending" if reply is not None else "none", now)
                return Claim("claimed", run_id)
            if row.status != "claimed" or now - row.updated_at < CLAIM_STALE_MS:
                return Claim("duplicate", row.run_id)
            row.updated_at = now
            return Claim("claimed", row.run_id, retaken=True)

    def started(self, key: str, now: int) -> None:
        """Mark the row started."""
        with self._lock:
            row = self._rows[key]
            row.status, row.updated_at = "started", now

    def release(self, key: str) -> None:
        """Age a failed claim so the next delivery retakes it."""
        with self._lock:
            row = self._rows.get(key)
            if row is not None and row.status == "claimed":
                row.updated_at = 0

    def reply_for(self, run_id: str) -> dict[str, Any] | None:
        """The stored reply target of the run's delivery."""
        with self._lock:
            row = self._row_of(run_id)
            return copy.deepcopy(row.reply) if row is not None else None

    def reply_done(self, run_id: str, now: int) -> None:
        """Close the pending reply."""
        with self._lock:
            row = self._row_of(run_id)
            if row is not None and row.reply_status == "pending":
                row.reply_status, row.updated_at = "done", now

    def pending_replies(self, ended_before: int, limit: int) -> Sequence[PendingReply]:
        """Pending rows whose run is over, oldest first."""
        with self._lock:
            rows = sorted((r for r in self._rows.values() if r.reply_status == "pending" and r.reply),
                          key=lambda r: r.updated_at)
        found = []
        for row in rows:
            run = self.store.get_run(row.run_id)
            if run is not None and run.status in _TERMINAL and run.updated_at < ended_before:
                found.append(PendingReply(row.run_id, row.agent, copy.deepcopy(row.reply or {})))
            if len(found) >= limit:
                break
        return found

    def _row_of(self, run_id: str) -> _Row | None:
        return next((r for r in self._rows.values() if r.run_id == run_id), None)
