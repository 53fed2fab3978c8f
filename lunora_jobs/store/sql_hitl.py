"""Store operations behind approvals, cancellation and the run-concurrency policies, over SQL.

- ``transition_run``: a compare-and-set on a run's status, so a cancel and a finishing step can race
  and exactly one of them decides how the run ended (neither overwrites the other).
- ``decide_tool_call``: records a human decision once (``WHERE decision IS NULL``); the row that
  comes back carries the winning decision, so a caller sees whether it agreed.
- ``enqueue_run`` / ``queued_runs`` / ``dequeue_run`` / ``queued_threads``: the durable FIFO of runs
  waiting for a thread (``on_concurrent_run="queue"``) in ``agent_run_queue``, ordered by an
  autoincrement ``seq`` — the database's arrival order, whichever process inserted.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lunora_jobs.errors import NotFoundError
from lunora_jobs.store.codec import check_identity
from lunora_jobs.store.records import ToolCallRecord
from lunora_jobs.store.schema import run_queue, runs, tool_calls
from lunora_jobs.store.sql_base import SqlBase
from lunora_jobs.store.sql_extras import tool_call_record
from lunora_jobs.store.sql_runs import run_values

DECISIONS = ("approved", "rejected")
AWAITING_APPROVAL = "awaiting_approval"


def check_decision(decision: str) -> None:
    """Refuse anything but ``approved`` / ``rejected``."""
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {DECISIONS}, got {decision!r}")


class SqlHitlMixin(SqlBase):
    """Run transitions, approval decisions and the per-thread run queue of ``SqlStore``."""

    def transition_run(self, run_id: str, from_statuses: Collection[str], **fields: Any) -> bool:
        """Apply ``fields`` (as ``update_run``) only while the run's status is one of ``from_statuses``.

        Returns whether the run was updated. One conditional UPDATE: race-free on every dialect.
        """
        values = run_values(fields, self.clock())
        stmt = (
            sa.update(runs)
            .where(runs.c.id == run_id, runs.c.status.in_(list(from_statuses)))
            .values(values)
        )
        return bool(self._write(lambda conn: conn.execute(stmt).rowcount == 1))

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

    # -- the per-thread run queue ---------------------------------------------------------------
    def enqueue_run(self, thread_id: str, run_id: str) -> None:
        """Append ``run_id`` to the thread's queue (idempotent: a run is queued at most once)."""
        row = {"thread_id": thread_id, "run_id": run_id, "created_at": self.clock()}
        self._write(lambda conn: conn.execute(self._insert_ignore(run_queue, [row], ["run_id"])))

    def queued_runs(self, thread_id: str, limit: int = 100) -> list[str]:
        """The thread's queued run ids in arrival order."""
        query = (
            sa.select(run_queue.c.run_id)
            .where(run_queue.c.thread_id == thread_id)
            .order_by(run_queue.c.seq)
            .limit(limit)
        )
        with self._read() as conn:
            return [str(r[0]) for r in conn.execute(query)]

    def dequeue_run(self, thread_id: str, run_id: str) -> bool:
        """Remove ``run_id`` from the queue; True for the one caller that removed it."""
        stmt = sa.delete(run_queue).where(run_queue.c.thread_id == thread_id, run_queue.c.run_id == run_id)
        return bool(self._write(lambda conn: conn.execute(stmt).rowcount == 1))

    def queued_threads(self, limit: int = 100) -> list[str]:
        """Ids of threads with at least one queued run (what the sweep promotes from)."""
        query = sa.select(run_queue.c.thread_id).distinct().order_by(run_queue.c.thread_id).limit(limit)
        with self._read() as conn:
            return [str(r[0]) for r in conn.execute(query)]
