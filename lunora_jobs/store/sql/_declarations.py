"""Which agents live workers serve, over SQL (``agent_declarations``), and the runs no one serves.

``declare_agents`` moves each named agent's ``seen_at`` forward (one upsert). ``undeclared_runs`` is
one query over the ``(status, updated_at)`` index of ``agent_runs``: running runs quiet since a cutoff,
with no step in the ledger (nobody ever claimed them), whose agent no declaration names as seen since
``live_since``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from lunora_jobs.store._codec import check_identity
from lunora_jobs.store.records import RunRecord
from lunora_jobs.store.schema import declarations, runs, steps
from lunora_jobs.store.sql._base import SqlBase
from lunora_jobs.store.sql._rows import run_record


class SqlDeclarationsMixin(SqlBase):
    """The agent declarations of ``SqlStore``."""

    def declare_agents(self, agents: Sequence[str]) -> None:
        """Record that a live worker serves ``agents`` now (``seen_at`` = the store's clock)."""
        names = sorted(set(agents))
        if not names:
            return
        for name in names:
            check_identity("agent", name)
        now = self.clock()
        stmt = self._insert(declarations).values([{"agent": name, "seen_at": now} for name in names])
        if self.dialect == "mysql":
            stmt = stmt.on_duplicate_key_update(seen_at=sa.func.greatest(declarations.c.seen_at,
                                                                         stmt.inserted.seen_at))
        else:
            newest = sa.func.max if self.dialect == "sqlite" else sa.func.greatest
            stmt = stmt.on_conflict_do_update(index_elements=["agent"],
                                              set_={"seen_at": newest(declarations.c.seen_at,
                                                                      stmt.excluded.seen_at)})
        self._write(lambda conn: conn.execute(stmt), autocommit=True)

    def declared_agents(self, since: int) -> dict[str, int]:
        """Agent -> ``seen_at`` of the declarations seen at or after ``since``."""
        query = sa.select(declarations).where(declarations.c.seen_at >= since)
        return self._query(lambda conn: {str(r.agent): int(r.seen_at) for r in conn.execute(query)})

    def undeclared_runs(self, before: int, live_since: int, *, limit: int) -> list[RunRecord]:
        """Running runs not updated since ``before`` and never claimed (no ledger row), whose agent
        no declaration names as seen since ``live_since``; stalest first, at most ``limit``."""
        declared = sa.select(declarations.c.agent).where(
            declarations.c.agent == runs.c.agent, declarations.c.seen_at >= live_since)
        claimed = sa.select(steps.c.run_id).where(steps.c.run_id == runs.c.id)
        query = (
            sa.select(runs)
            .where(runs.c.status == "running", runs.c.updated_at <= before, ~declared.exists(),
                   ~claimed.exists())
            .order_by(runs.c.updated_at, runs.c.id)
            .limit(max(limit, 0))
        )
        return self._query(lambda conn: [run_record(row) for row in conn.execute(query)])
