"""The start's outbox over SQL (``agent_outbox``): what the sweep sends when a start's own send failed.

Rows are inserted by ``create_run`` (``RunOpening.outbox``) in the run's transaction; the start deletes
them once the broker took the dispatch (``clear_outbox``). ``due_outbox`` is one indexed read of the
``(agent, created_at)`` index: rows of the sweeping app's agents older than a cutoff, oldest first.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from lunora_jobs.store.records import OutboxEntry
from lunora_jobs.store.schema import outbox
from lunora_jobs.store.sql._base import SqlBase
from lunora_jobs.store.sql._postgres.statements import CLEAR_OUTBOX_SQL


class SqlOutboxMixin(SqlBase):
    """The outbox reads and deletes of ``SqlStore``."""

    def due_outbox(self, before: int, *, agents: Sequence[str], limit: int) -> list[OutboxEntry]:
        """Outbox rows of ``agents`` created at or before ``before``, oldest first, at most ``limit``."""
        query = (
            sa.select(outbox)
            .where(outbox.c.agent.in_(list(agents)), outbox.c.created_at <= before)
            .order_by(outbox.c.created_at, outbox.c.run_id, outbox.c.step)
            .limit(max(limit, 0))
        )
        return self._query(lambda conn: [
            OutboxEntry(str(r.run_id), str(r.step), str(r.kind), str(r.agent), int(r.created_at))
            for r in conn.execute(query)
        ])

    def clear_outbox(self, keys: Sequence[tuple[str, str]]) -> int:
        """Delete the outbox rows ``keys`` = (run_id, step) pairs (sent); how many were there."""
        if not keys:
            return 0
        if self.dialect == "postgresql":  # on every start: SQL text, without a SQLAlchemy Connection
            params = {"run_ids": [run_id for run_id, _ in keys], "steps": [step for _, step in keys]}
            return len(self._pipeline([(CLEAR_OUTBOX_SQL, params)])[0])
        stmt = sa.delete(outbox).where(sa.tuple_(outbox.c.run_id, outbox.c.step).in_(list(keys)))
        return int(self._write(lambda conn: conn.execute(stmt).rowcount, autocommit=True))
