"""The sweep's reads over SQL: what is stalled, found by indexed queries, keyset-paged.

Each read costs one query whatever the number of runs, ordered by staleness so a tick that stops at
its budget resumes with the stalest next time (the sweep touches what it examined):

- ``lapsed_steps``: running steps of running or parked runs whose lease lapsed (a dead worker's
  steps, found through the ``(status, lease_expires_at)`` index of ``agent_steps``; a parked run's
  sibling tool calls run while it waits for an approval);
- ``quiet_runs``: runs of a status not updated since a cutoff (the ``(status, updated_at)`` index
  of ``agent_runs``);
- ``parked_runs_to_wake``: parked runs with a recorded decision not yet applied, or with nothing
  left awaiting approval — a parked run with a pending approval is never returned, so hibernated
  runs cost no work per tick beyond the index probes of this one query.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from lunora_jobs.store._rules import AWAITING_APPROVAL, LAPSABLE
from lunora_jobs.store.records import RunRecord, StepRecord
from lunora_jobs.store.schema import runs, steps, tool_calls
from lunora_jobs.store.sql._base import SqlBase
from lunora_jobs.store.sql._rows import run_record, step_record


class SqlSweepMixin(SqlBase):
    """The sweep's reads of ``SqlStore``."""

    def lapsed_steps(
        self, now: int, *, agents: Sequence[str], limit: int, after: tuple[int, str, str] | None = None,
    ) -> list[StepRecord]:
        """Running steps of running or parked runs of ``agents`` whose lease lapsed (``0 <
        lease_expires_at <= now``), oldest lapse first, after ``after`` = (lease_expires_at, run_id,
        name)."""
        query = (
            sa.select(steps)
            .join(runs, runs.c.id == steps.c.run_id)
            .where(steps.c.status == "running", steps.c.lease_expires_at > 0, steps.c.lease_expires_at <= now,
                   runs.c.status.in_(LAPSABLE), runs.c.agent.in_(list(agents)))
            .order_by(steps.c.lease_expires_at, steps.c.run_id, steps.c.name)
            .limit(max(limit, 0))
        )
        if after is not None:
            query = query.where(sa.tuple_(steps.c.lease_expires_at, steps.c.run_id, steps.c.name)
                                > sa.tuple_(*after))
        return self._query(lambda conn: [step_record(row) for row in conn.execute(query)])

    def quiet_runs(
        self, status: str, before: int, *, agents: Sequence[str], limit: int,
        after: tuple[int, str] | None = None,
    ) -> list[RunRecord]:
        """Runs of ``agents`` in ``status`` not updated since ``before``, stalest first, after
        ``after`` = (updated_at, id)."""
        query = (
            sa.select(runs)
            .where(runs.c.status == status, runs.c.updated_at <= before, runs.c.agent.in_(list(agents)))
            .order_by(runs.c.updated_at, runs.c.id)
            .limit(max(limit, 0))
        )
        if after is not None:
            query = query.where(sa.tuple_(runs.c.updated_at, runs.c.id) > sa.tuple_(*after))
        return self._query(lambda conn: [run_record(row) for row in conn.execute(query)])

    def parked_runs_to_wake(
        self, before: int, *, agents: Sequence[str], limit: int, after: tuple[int, str] | None = None,
    ) -> list[RunRecord]:
        """Parked (``awaiting_input``) runs of ``agents`` with a decision recorded by ``before`` but
        not applied to the ledger, or quiet since ``before`` with no call awaiting approval; stalest
        first, after ``after`` = (updated_at, id)."""
        awaiting = sa.exists().where(tool_calls.c.run_id == runs.c.id,
                                     tool_calls.c.status == AWAITING_APPROVAL)
        applied = sa.exists().where(
            steps.c.run_id == tool_calls.c.run_id, steps.c.name == sa.literal("approval:") + tool_calls.c.id,
            steps.c.status == "completed",
        )
        unapplied = sa.exists().where(
            tool_calls.c.run_id == runs.c.id, tool_calls.c.decision.is_not(None),
            tool_calls.c.decided_at <= before, ~applied,
        )
        query = (
            sa.select(runs)
            .where(runs.c.status == "awaiting_input", runs.c.agent.in_(list(agents)),
                   sa.or_(unapplied, sa.and_(runs.c.updated_at <= before, ~awaiting)))
            .order_by(runs.c.updated_at, runs.c.id)
            .limit(max(limit, 0))
        )
        if after is not None:
            query = query.where(sa.tuple_(runs.c.updated_at, runs.c.id) > sa.tuple_(*after))
        return self._query(lambda conn: [run_record(row) for row in conn.execute(query)])
