"""A run's status and its thread's status, moved together in ONE statement (no reader sees a mix).

Parking a run (``awaiting_input``), resuming it, and ending it change the run row and the thread row.
Written as two statements, a reader could see the run ``awaiting_input`` and its thread still
``running``. ``transition_run_and_thread`` is a compare-and-set on the run's status (like
``transition_run``) that carries the thread's change with it:

- PostgreSQL: data-modifying CTEs, the run's UPDATE feeding the thread's (one statement, one snapshot);
- MySQL/MariaDB: one multiple-table UPDATE (the run LEFT JOIN its thread);
- SQLite: one transaction (SQLite has no multiple-table UPDATE; its single writer commits both rows
  at once, and a reader sees the database either before or after the commit).

``release=True`` also frees the thread's active-run slot; then the thread changes only while this run
holds the slot (a run that ended without holding it leaves another run's thread alone).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lunora_jobs.store._rules import status_move_fields
from lunora_jobs.store.schema import runs, threads
from lunora_jobs.store.sql._base import SqlBase
from lunora_jobs.store.sql._runs import run_values


class SqlRunStatusMixin(SqlBase):
    """``transition_run_and_thread`` of ``SqlStore``."""

    def transition_run_and_thread(
        self, run_id: str, from_statuses: Collection[str], *, thread_status: str, release: bool = False,
        **fields: Any,
    ) -> bool:
        """Apply ``fields`` to the run (as ``transition_run``) only while its status is one of
        ``from_statuses``, and in the same statement set its thread's status to ``thread_status``
        (``release``: and free the thread's slot, only if this run holds it). True if the run moved."""
        now = self.clock()
        values = run_values(status_move_fields(fields), now)
        params: dict[str, Any] = {f"r_{k}": v for k, v in values.items()}
        params.update(run_id=run_id, froms=list(from_statuses), thread_status=thread_status, now=now)
        if self.dialect == "sqlite":
            return bool(self._write(lambda conn: self._two_writes(conn, run_id, values, params, release)))
        sets = ", ".join(f"{{r}}{column} = :r_{column}" for column in values)
        holder = " AND {t}active_run_id = {r}id" if release else ""
        slot = ", {t}active_run_id = NULL" if release else ""
        if self.dialect == "postgresql":
            sql = (
                f"WITH r AS (UPDATE {runs.name} SET {sets.format(r='')} WHERE id = :run_id"
                f" AND status IN :froms RETURNING id, thread_id),"
                f" t AS (UPDATE {threads.name} SET status = :thread_status, updated_at = :now"
                f"{slot.format(t='')} FROM r WHERE {threads.name}.id = r.thread_id"
                f"{holder.format(t=threads.name + '.', r='r.')} RETURNING 1)"
                " SELECT count(*) FROM r"
            )
            stmt = sa.text(sql).bindparams(sa.bindparam("froms", expanding=True))
            return bool(self._write(lambda conn: int(conn.execute(stmt, params).scalar_one()) == 1,
                                    autocommit=True))
        sql = (
            f"UPDATE {runs.name} r LEFT JOIN {threads.name} t ON t.id = r.thread_id"
            f"{holder.format(t='t.', r='r.')}"
            f" SET {sets.format(r='r.')}, t.status = :thread_status, t.updated_at = :now{slot.format(t='t.')}"
            " WHERE r.id = :run_id AND r.status IN :froms"
        )
        stmt = sa.text(sql).bindparams(sa.bindparam("froms", expanding=True))
        # Rows matched (the MySQL dialect counts found rows): 1 for the run, 1 more for its thread.
        return bool(self._write(lambda conn: conn.execute(stmt, params).rowcount >= 1, autocommit=True))

    def _two_writes(
        self, conn: Connection, run_id: str, values: dict[str, Any], params: dict[str, Any], release: bool,
    ) -> bool:
        moved = conn.execute(
            sa.update(runs).where(runs.c.id == run_id, runs.c.status.in_(params["froms"])).values(values)
        ).rowcount == 1
        if not moved:
            return False
        thread_id = sa.select(runs.c.thread_id).where(runs.c.id == run_id).scalar_subquery()
        stmt = sa.update(threads).where(threads.c.id == thread_id)
        patch: dict[str, Any] = {"status": params["thread_status"], "updated_at": params["now"]}
        if release:
            stmt = stmt.where(threads.c.active_run_id == run_id)
            patch["active_run_id"] = None
        conn.execute(stmt.values(patch))
        return True
