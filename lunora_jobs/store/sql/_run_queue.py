"""The per-thread run queue over SQL (``on_concurrent_run="queue"``).

``enqueue_run`` / ``queued_runs`` / ``dequeue_run`` / ``queued_threads``: the durable FIFO of runs
waiting for a thread in ``agent_run_queue``, ordered by an autoincrement ``seq`` — the database's
arrival order, whichever process inserted.
"""

from __future__ import annotations

import sqlalchemy as sa

from lunora_jobs.store.schema import run_queue
from lunora_jobs.store.sql._base import SqlBase


class SqlRunQueueMixin(SqlBase):
    """The per-thread run queue of ``SqlStore``."""

    def enqueue_run(self, thread_id: str, run_id: str) -> None:
        """Append ``run_id`` to the thread's queue (idempotent: a run is queued at most once)."""
        row = {"thread_id": thread_id, "run_id": run_id, "created_at": self.clock()}
        self._write(lambda conn: conn.execute(self._insert_ignore(run_queue, ["run_id"]), row))

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
